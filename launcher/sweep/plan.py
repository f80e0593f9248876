"""A sweep plan (`gpubench-launch sweep PLAN.toml`): cells of a workload and its `gpubench run` arguments
times GPU types, under one dollar cap. Read and checked here without any request; the GPU names are
checked against /instances/types by the sweep itself.

    name = "weekly"              # optional; the file's stem otherwise
    max_usd = 20.0               # the whole sweep, worst case
    capacity_wait_minutes = 10   # optional: how long each job may wait for a free GPU
    max_runtime_minutes = 30     # optional: each job's safety net (default: the workload's), the worst case's base
    [slurm]                      # optional: the cells go to this Slurm cluster instead (slurm/plan.py); no max_usd
    [docker]                     # or to these Docker hosts (docker_hosts/plan.py); one provider table at most
    [[cell]]
    workload = "train-compile"
    gpus = ["H100", "L40S", "RTX5090"]
    args = ["--smoke", "--setups", "eager-sdpa,eager-eager"]
    image = "ghcr.io/me/train-compile:dev"   # optional: another image than the workload's pinned one

The sweep id is `<name>-<8 hex of the cells' content>`: the same plan resumes the same sweep, whatever its
comments, order or max_usd (raising the cap to finish a sweep keeps what it has); other cells, another sweep.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import click
from pydantic import Field

from gpubench.run_args import RunArgs

from ..errors import LaunchError, Table, read_table
from ..plan import check_overrides, resolve_setups, resolve_workload, run_command
from ..run_check import check_run_command

# The `gpubench run` arguments a cell may pass through (as `gpubench-launch WORKLOAD` takes them).
CELL_ARGS = ("smoke", "setups", "repeats", "overrides", "weights")


@dataclass(frozen=True)
class Cell:
    """One job of the sweep: a workload with its arguments on one GPU type (as the plan spells it)."""

    workload: str
    gpu: str
    args: tuple[str, ...]
    smoke: bool = False
    setups: tuple[str, ...] | None = None
    repeats: int | None = None
    overrides: tuple[str, ...] = ()
    weights: str | None = None
    image: str | None = None  # None: the workload's pinned image

    @property
    def identity(self) -> list[str]:
        """What makes the cell's results what they are, besides its workload and GPU: its arguments (and its image,
        when it names one)."""
        return [*self.args, *([f"image={self.image}"] if self.image else [])]

    @property
    def args_key(self) -> str:
        """8 hex of the arguments: cells of one workload and GPU with other arguments are kept apart."""
        return hashlib.sha256(json.dumps(self.identity).encode()).hexdigest()[:8]

    @property
    def label(self) -> str:
        return " ".join([self.workload, *self.args])


@dataclass(frozen=True)
class Plan:
    name: str
    max_usd: float | None  # the default provider's cap (Runcrate bills); a provider table may have its own
    cells: tuple[Cell, ...]
    capacity_wait_minutes: int | None = None
    max_runtime_minutes: int | None = None
    source: str = ""
    provider_table: tuple[str, Any] | None = None  # ([slurm] or [docker], as written): where the cells go

    @property
    def sweep_id(self) -> str:
        content = sorted([c.workload, c.gpu.lower(), c.identity] for c in self.cells)
        return f"{self.name}-{hashlib.sha256(json.dumps(content).encode()).hexdigest()[:8]}"


class PlanTable(Table):
    """The plan file's top level, as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "name": "name must be 1-40 of a-z, 0-9 and '-', starting with a letter or digit",
        "max_usd": "max_usd must be a positive number of dollars, not {value!r}",
        "capacity_wait_minutes": "capacity_wait_minutes must be a whole number from 0 to 1440",
        "max_runtime_minutes": "max_runtime_minutes must be a whole number from 1 to 10080",
        "cell": "write cells as [[cell]] tables",
    }

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")]
    max_usd: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    capacity_wait_minutes: Annotated[int, Field(ge=0, le=1440)] | None = None
    max_runtime_minutes: Annotated[int, Field(ge=1, le=10080)] | None = None
    cell: list[dict[str, Any]] = []


class CellTable(Table):
    """One [[cell]] table, as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "workload": "give workload = \"NAME\" (gpubench list)",
        "gpus": "give gpus = [\"L40S\", ...], one GPU type or more",
        "args": "args must be a list of strings, e.g. [\"--smoke\", \"--setups\", \"a,b\"]",
        "image": "image must be an image reference, e.g. \"ghcr.io/me/train-compile:dev\"",
    }

    workload: Annotated[str, Field(min_length=1)]
    gpus: Annotated[list[Annotated[str, Field(pattern=r"^\s*\S")]], Field(min_length=1)]
    args: list[str] = []
    image: Annotated[str, Field(pattern=r"^[a-z0-9][^\s]*$")] | None = None


def load_plan(path: str | Path) -> Plan:
    """The plan, read once and checked; a LaunchError (one line, exit 2) for anything wrong, before any request. Its
    provider table ([slurm], [docker]) is kept as written: the provider it names checks it (providers.for_plan)."""
    from .. import providers

    path = Path(path)
    where = f"plan {path}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LaunchError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LaunchError(f"{where} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise LaunchError(f"{where}: TOML syntax error: {exc}") from None
    stem = re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-") or "sweep"
    provider_table = providers.plan_table(data, where)
    table = read_table(PlanTable, {"name": stem, **data}, where)
    if table.max_usd is None and provider_table is None:  # an owned cluster's or host's cap is in its own table
        raise LaunchError(f"{where}: max_usd is missing: give the most the whole sweep may cost, e.g. max_usd = 20.0")
    cells = [cell for n, cell_table in enumerate(table.cell, 1) for cell in _cells(cell_table, f"{where}, cell {n}")]
    if not cells:
        raise LaunchError(f"{where}: the matrix is empty: add [[cell]] tables with a workload and gpus")
    seen = set()
    for cell in cells:
        key = (cell.workload, cell.gpu.lower(), tuple(cell.identity))
        if key in seen:
            raise LaunchError(f"{where}: {cell.label} on {cell.gpu} is in the plan twice")
        seen.add(key)
    return Plan(name=table.name, max_usd=table.max_usd, cells=tuple(cells),
                capacity_wait_minutes=table.capacity_wait_minutes, max_runtime_minutes=table.max_runtime_minutes,
                source=str(path), provider_table=provider_table)


def _cells(written: dict, where: str) -> list[Cell]:
    table = read_table(CellTable, written, where)
    try:
        spec = resolve_workload(table.workload)
    except LaunchError as exc:
        raise LaunchError(f"{where}: {exc}") from None
    try:
        parsed = RunArgs.from_argv([spec.name, *table.args], allowed=CELL_ARGS)
    except click.ClickException as exc:
        raise LaunchError(f"{where}: bad args: {exc.format_message()}") from None
    try:
        setups = resolve_setups(spec, parsed.setups)
        overrides = tuple(check_overrides(parsed.overrides))
        # The cell's job command, checked by the job's own code here: a bad --set is refused before any request.
        check_run_command(run_command(spec, setups, parsed.smoke, parsed.repeats, overrides, parsed.weights))
    except LaunchError as exc:
        raise LaunchError(f"{where}: {exc}") from None
    return [Cell(workload=spec.name, gpu=gpu.strip(), args=tuple(table.args), smoke=parsed.smoke,
                 setups=tuple(setups) if setups else None, repeats=parsed.repeats, overrides=overrides,
                 weights=parsed.weights, image=table.image) for gpu in table.gpus]
