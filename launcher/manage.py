"""`gpubench-launch status|logs|cancel RUN_ID` and `cleanup`, for every provider.

A run id is looked up where this host's evidence says it ran (its state file while a launcher follows it, else the
provider named in its folder's job.json or config.json), else with every provider that can look runs up from here
(Runcrate with a key, Slurm with a configured client, a Docker host from DOCKER_HOST), in the registry's order; the
first that knows it answers. `cleanup` asks every provider that can look."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from . import errors, providers
from .errors import LaunchError
from .results import find_run_folder
from .state import LaunchState

EVIDENCE_FILES = ("job.json", "config.json")


def evidence(run_id: str, results_dir: str) -> dict[str, Any]:
    """What this host knows of a run: its state file's facts (provider, job id, host) and its folder's job.json and
    config.json, the state file first (it is the newest)."""
    found: dict[str, Any] = {}
    state = LaunchState(run_id).path
    sources = [state] if state.is_file() else []
    folder = find_run_folder(results_dir, run_id)
    if folder is not None:
        found["folder"] = str(folder)
        sources += [folder / name for name in EVIDENCE_FILES if (folder / name).is_file()]
    for path in sources:
        try:
            facts = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(facts, dict):
            for key, value in facts.items():
                found.setdefault(key, value)
    return found


def status(run_id: str, results_dir: str) -> int:
    return asyncio.run(_ask("status", run_id, results_dir, (results_dir,)))


def logs(run_id: str, follow: bool, results_dir: str) -> int:
    return asyncio.run(_ask("logs", run_id, results_dir, (follow, results_dir)))


def cancel(run_id: str, results_dir: str) -> int:
    return asyncio.run(_ask("cancel", run_id, results_dir, ()))


async def _ask(what: str, run_id: str, results_dir: str, args: tuple) -> int:
    asked = providers.for_run(evidence(run_id, results_dir)) or [default_provider()]
    for provider in asked:
        code = await getattr(provider, what)(run_id, *args)
        if code is not None:
            return code
    if len(asked) == 1:
        raise LaunchError(asked[0].not_found(run_id))
    raise LaunchError(f"no run {run_id!r} here: " + "; ".join(p.not_found(run_id) for p in asked))


def cleanup(all_hosts: bool, dry_run: bool) -> int:
    return asyncio.run(_cleanup(all_hosts, dry_run))


async def _cleanup(all_hosts: bool, dry_run: bool) -> int:
    found = providers.everywhere()
    if not found:
        reach = "; ".join(f"{cls.title}: {cls.reached_by}" for cls in map(providers.get, providers.names()))
        raise LaunchError(f"cleanup: no provider can be reached from here ({reach})")
    return errors.combine([await provider.cleanup(all_hosts, dry_run) for provider in found])


def default_provider():
    """The default provider (Runcrate), to look things up with: its own error says what is missing (the key)."""
    return providers.get(providers.DEFAULT).for_run({"provider": providers.DEFAULT})
