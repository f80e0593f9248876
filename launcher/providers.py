"""The places runs go, one line each: the only module that names providers. A fourth provider is a folder
(launcher/<folder>/: provider.py with a `provider.Provider` subclass, options.py with its CLI options) and one line
here. Nothing else compares provider names; lookups by name fail listing the valid ones.

Which provider a call uses: a launch's option that names a place (`--slurm FILE`, `--docker-host URL`), or a sweep
plan's table (`[slurm]`, `[docker]`); with none, the default (the first line: Runcrate). Two at once is one line,
exit 2. Provider modules are imported when a call uses them (Runcrate's SDK, the docker SDK load only then); their
options modules import only click, so `gpubench-launch --help` stays light.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpubench.registry import Registry, UnknownName

if TYPE_CHECKING:
    from .provider import Provider


def _error(message: str) -> Exception:
    from .errors import LaunchError  # pydantic's import stays out of `gpubench-launch --help`

    return LaunchError(message)


@dataclass(frozen=True)
class Entry:
    name: str  # plain: what config.json, job.json and the state files record
    folder: str  # launcher/<folder>/: provider.py holds `cls`; options.py (if any) its CLI options
    cls: str
    table: str | None = None  # the sweep plan's table that sends its cells here; None: the default provider
    option: str | None = None  # the launch option that sends a run here (its name in options.py); None: the default
    options: bool = False  # whether <folder>/options.py declares CLI options

    def load(self) -> type[Provider]:
        return getattr(importlib.import_module(f"{__package__}.{self.folder}.provider"), self.cls)

    def options_module(self):
        return importlib.import_module(f"{__package__}.{self.folder}.options") if self.options else None


PROVIDERS: Registry[Entry] = Registry("provider")
for _entry in (
    Entry("runcrate", "runcrate", "Runcrate"),
    Entry("slurm", "slurm", "Slurm", table="slurm", option="slurm", options=True),
    Entry("docker", "docker_hosts", "DockerHosts", table="docker", option="docker_host", options=True),
):
    PROVIDERS.add(_entry.name, _entry)
DEFAULT = PROVIDERS.names()[0]


def get(name: str) -> type[Provider]:
    """A provider by its name; an unknown name is one line listing the valid ones."""
    try:
        return PROVIDERS.get(name).load()
    except UnknownName as exc:
        raise _error(str(exc)) from None


def names() -> list[str]:
    return PROVIDERS.names()


def tables() -> list[str]:
    """The sweep-plan tables that name a provider ([slurm], [docker])."""
    return [e.table for e in PROVIDERS if e.table]


# --- the CLI's options (cli.py) ------------------------------------------------------------------------------------
def launch_options() -> list:
    """The click options each provider adds to `gpubench-launch WORKLOAD`."""
    return [option for e in PROVIDERS if e.options for option in e.options_module().LAUNCH]


def sweep_options() -> list:
    """The click options each provider adds to `gpubench-launch sweep`."""
    return [option for e in PROVIDERS if e.options for option in e.options_module().SWEEP]


def option_names(sweep: bool = False) -> dict[str, str]:
    """{option's parameter name: its provider's name}, for the launch's (or the sweep's) provider options."""
    return {name: e.name for e in PROVIDERS if e.options
            for name in (e.options_module().SWEEP_NAMES if sweep else e.options_module().LAUNCH_NAMES)}


# --- choosing the provider of a call --------------------------------------------------------------------------------
def for_launch(options) -> Provider:
    """The provider a launch's options name (`options.provider_options`: the provider options given), built."""
    given = options.provider_options
    chosen = [e for e in PROVIDERS if e.option and given.get(e.option)]
    if len(chosen) > 1:
        flags = " and ".join(f"--{e.option.replace('_', '-')}" for e in chosen)
        raise _error(f"{flags}: a run goes to one place; give one of them")
    entry = chosen[0] if chosen else PROVIDERS.get(DEFAULT)
    _refuse_others(entry, given, option_names())
    return entry.load().from_launch(options)


def for_plan(plan, options) -> Provider:
    """The provider a sweep plan's table names (plan.provider_table: the table's name and content, or None)."""
    name, table = plan.provider_table or (None, None)
    entry = next((e for e in PROVIDERS if e.table and e.table == name), None) or PROVIDERS.get(DEFAULT)
    _refuse_others(entry, options.provider_options, option_names(sweep=True), plan=plan)
    return entry.load().from_plan(table, plan, options)


def _refuse_others(entry: Entry, given: dict[str, Any], owners: dict[str, str], plan=None) -> None:
    """An option of another provider than the one chosen is a mistake, not something to ignore."""
    for name, value in given.items():
        if value and owners.get(name) != entry.name:
            owner = PROVIDERS.get(owners[name])
            flag = f"--{name.replace('_', '-')}"
            if plan is not None:
                raise _error(f"plan {plan.source}: {flag} needs a [{owner.table}] table in the plan")
            raise _error(f"{flag} applies to {owner.load().title} runs (with --{owner.option.replace('_', '-')})")


def plan_table(data: dict[str, Any], where: str) -> tuple[str, Any] | None:
    """The one provider table of a plan's top level (removed from `data`), or None; two is one line."""
    found = [(name, data.pop(name)) for name in tables() if name in data]
    if len(found) > 1:
        raise _error(f"{where}: [{found[0][0]}] and [{found[1][0]}]: a sweep goes to one place; keep one table")
    return found[0] if found else None


# --- by run id (status, logs, cancel, cleanup) ----------------------------------------------------------------------
def for_run(evidence: dict[str, Any]) -> list[Provider]:
    """The providers to ask about a run: the one its evidence names (job.json, config.json or its state file), else
    every provider that can look runs up from here, in the registry's order."""
    named = evidence.get("provider")
    if named in PROVIDERS:
        found = PROVIDERS.get(named).load().for_run(evidence)
        return [found] if found is not None else []
    return [p for e in PROVIDERS if (p := e.load().for_run(evidence)) is not None]


def everywhere() -> list[Provider]:
    """Every provider that can look runs up from here (for cleanup)."""
    return [p for e in PROVIDERS if (p := e.load().for_run({})) is not None]
