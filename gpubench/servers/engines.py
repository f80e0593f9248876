"""Engines built from source, which no package metadata knows: each name a catalog entry's `engines` may list, with
how to read the version of the build `gpubench run` would start here (None where there is none). The CLI reads them
into the run's request; the environment block records them among its libraries."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gpubench.servers import llamacpp

VERSIONS: dict[str, Callable[[], str | None]] = {"llama.cpp": llamacpp.installed_version}


def versions(names: Iterable[str]) -> dict[str, str | None]:
    """{'llama.cpp': '0.5.0 (0c1e570, CUDA sm_90)'} for the names given (each one of VERSIONS)."""
    return {name: VERSIONS[name]() for name in names}
