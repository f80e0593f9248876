"""`gpubench-launch sweep PLAN.toml`: every cell of a plan (a workload with its arguments, on one GPU type) as
one job, all at once, on the provider the plan's table names, through the launcher's own machinery (run_launches:
one view, one Ctrl-C), under the plan's one cap (dollars, or GPU-hours of owned machines), into one store prefix
per sweep.

Resuming is reading: the store (or the local results folder) says which cells have complete results, the
provider says which jobs a killed launcher left behind (Runcrate's job tags, a Docker host's container labels, the
side folders of Slurm's batches). The same call again launches only the cells with neither, and follows the
left-behind jobs instead of paying for them twice; a job that ended while no launcher followed it gets its
job.json now, and what it used counts under the cap. A cell whose GPU type had no capacity is reported, and tried
again only with --retry-unavailable (or in another sweep), so a second call after a complete sweep launches
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import errors
from ..errors import LaunchError
from ..provider import USD
from ..redact import Redactor
from .plan import Cell, Plan, load_plan
from .store import Attempt, SweepStore, finished_status

_SWEEP_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


@dataclass
class SweepOptions:
    plan: str
    store: str | None = None
    results_dir: str = "gpubench-results"
    dry_run: bool = False
    verbose: bool = False
    retry_unavailable: bool = False
    sweep_id: str | None = None
    provider_options: dict[str, Any] = field(default_factory=dict)  # the providers' own (--slurm-python, ...)


@dataclass
class PlannedCell:
    cell: Cell
    path: str  # <workload>/<gpu>/<args key>: its folder under the sweep
    launch: Any  # its LaunchPlan (one run)
    state: str = "pending"  # done | no capacity | pending | follow | ... after the run: what happened
    run_id: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    adopt: Any = None  # a job of this cell that a killed launcher left (followed, not submitted again)
    note: str = ""
    cost_usd: float | None = None
    exit_code: int = errors.OK

    @property
    def to_launch(self) -> bool:
        return self.state in ("pending", "follow")

    @property
    def run(self):
        return self.launch.runs[0]


def sweep(o: SweepOptions) -> int:
    from .. import providers

    plan = load_plan(o.plan)  # read once: its [slurm] or [docker] table (or none) names the provider
    provider = providers.for_plan(plan, o)
    return asyncio.run(_sweep(o, plan, provider))


async def _sweep(o: SweepOptions, plan: Plan, provider) -> int:
    from gpubench.gpu_fit import why_unfit
    from gpubench.stores import StoreError, check_local_dir, parse_store

    from ..launch import LaunchOptions, build_plan, check_store, refusals, run_launches
    from ..pace import Pace
    from ..plan import resolve_workload
    from ..progress import ProgressView

    sweep_id = o.sweep_id or plan.sweep_id
    if not _SWEEP_ID.match(sweep_id):
        raise LaunchError(f"bad --sweep-id {sweep_id!r}: 1-64 of a-z, 0-9 and '-'")
    redact = Redactor()
    try:
        pace = Pace.from_env()
        store = parse_store(o.store)
        check_local_dir(o.results_dir)  # creates nothing: a dry run refuses what the real run would
    except (ValueError, StoreError) as exc:
        raise LaunchError(str(exc)) from None
    where = SweepStore(sweep_id, store, o.results_dir)

    try:
        await provider.open(o.dry_run)
        cells: list[PlannedCell] = []
        unfit: dict[str, str | None] = {}  # cell path -> why its GPU cannot run it (gpubench/gpu_fit.py)
        for cell in plan.cells:
            spec = resolve_workload(cell.workload)
            try:
                choice = await provider.offer(cell.gpu, spec)
            except LaunchError as exc:  # "plan P: CELL: why", whether the provider named the plan or not
                where = f"plan {plan.source}"
                raise LaunchError(f"{where}: {cell.label}: {str(exc).removeprefix(f'{where}: ')}") from None
            path = f"{spec.name}/{choice.wire.replace(':', 'x')}/{cell.args_key}"
            options = LaunchOptions(
                workload=spec.name, gpus=(cell.gpu,), each=True, smoke=cell.smoke,
                setups=",".join(cell.setups) if cell.setups else None, repeats=cell.repeats,
                overrides=cell.overrides, weights=cell.weights, image=cell.image, results_dir=str(where.root / path),
                capacity_wait=plan.capacity_wait_minutes, max_runtime_minutes=plan.max_runtime_minutes,
            )
            launch = build_plan(options, spec, list(cell.setups) if cell.setups else None, provider, [choice],
                                where.cell_store(path))
            launch.extra_tags = {"gpubench_sweep": sweep_id, "gpubench_cell": path}
            cells.append(PlannedCell(cell, path, launch))
            unfit[path] = why_unfit(spec, choice.gpu_type, choice.count, cell.setups, cell.smoke)
        note = await provider.check([c.launch for c in cells], o.dry_run)  # before anything is submitted
        try:
            attempts = await asyncio.to_thread(where.attempts)
        except StoreError as exc:
            raise LaunchError(redact(str(exc))) from None
        _classify(cells, attempts, o.retry_unavailable)
        _refuse_unfit(cells, unfit, o.plan)
        priced = provider.cap_unit == USD
        if not priced:
            for c in cells:
                c.cost_usd = None  # owned machines cost no dollars here; their GPU-hours are in each job.json
        spent = sum(a.cost_usd if priced else a.gpu_hours for a in attempts)
        worst = sum(provider.worst_case(c.launch, c.run) or 0.0 for c in cells if c.to_launch)
        over = provider.over_cap(plan, worst, spent)
        if o.dry_run:
            provider.print_sweep(plan, sweep_id, where.url, cells, spent,
                                 {c.path: where.cell_store(c.path) for c in cells}, note)
            if over:
                raise LaunchError(over)
            return errors.OK
        if over:  # before any request that could start or bill anything
            raise LaunchError(over)
        left = await provider.left_behind(sweep_id, {a.run_id for a in attempts if a.ended},
                                          {c.path: c.launch for c in cells},
                                          {c.path for c in cells if c.state == "pending"})
        for c in cells:
            if c.path in left.follow and c.state == "pending":
                found = left.follow[c.path]
                c.adopt, c.state, c.note = found.job, "follow", found.note
                c.run.run_id = c.run_id = found.run_id
                c.run.env = c.launch.env_for(c.run)
        if left.ended:  # jobs that ended unfollowed used the cluster too: counted before anything is submitted
            over = provider.over_cap(plan, worst, spent + sum(e.used for e in left.ended))
            if over:
                raise LaunchError(over)
        view = ProgressView(verbose=o.verbose)
        replaced = await _record_ended(provider, left.ended, cells, where, redact, view)
        todo = [c for c in cells if c.to_launch]
        for c in cells:
            if not c.to_launch:
                view.say(None, f"{c.cell.label} on {c.cell.gpu}: {c.state} ({c.note})")
            elif c.adopt is not None:
                view.say(None, f"{c.cell.label} on {c.cell.gpu}: {c.note}")
        outcomes = []
        if todo:
            await check_store(where.cell_store(todo[0].path), todo[0].run.run_id, redact)
            outcomes = refusals(await run_launches(
                provider, [(c.launch, where.cell_store(c.path)) for c in todo], pace, redact, view,
                adopt={c.run.run_id: c.adopt for c in todo if c.adopt is not None},
                cap=provider.running_cap(plan, spent)))
            view.summary(outcomes)
        for c, outcome in zip(todo, outcomes, strict=True):
            _settle(c, outcome)
            if c.path in replaced:
                c.note = "; ".join(n for n in (replaced[c.path], c.note) if n)
    finally:
        await provider.close()
    return await _finish(plan, sweep_id, where, cells, spent, view, redact)


async def _finish(plan: Plan, sweep_id: str, where: SweepStore, cells: list[PlannedCell], spent: float, view,
                  redact) -> int:
    """sweep.json beside the cells, the summary table, the one exit code."""
    from gpubench.stores import StoreError

    summary = _summary(plan, sweep_id, where.url, cells, spent)
    try:
        summary["stored"] = await asyncio.to_thread(where.write_summary, summary)
    except StoreError as exc:
        view.say(None, redact(str(exc)))
        return errors.combine([errors.LAUNCHER_TROUBLE] + [c.exit_code for c in cells])
    print_summary(view, summary)
    return errors.combine([c.exit_code for c in cells])


async def _record_ended(provider, ended: list, cells: list[PlannedCell], where: SweepStore, redact,
                        view) -> dict[str, str]:
    """The jobs an earlier call left that ended while no launcher followed them: each one's job.json written (and its
    folder stored) now, and said; {cell path: note} for the cells still without a result, submitted again."""
    by_path = {c.path: c for c in cells}
    replaced = {}
    for e in ended:
        c = by_path[e.cell]
        said = await provider.record_ended(e, c.launch, where.cell_store(c.path), redact)
        again = "; submitting the cell again" if c.state == "pending" else ""
        view.say(None, f"{c.cell.label} on {c.cell.gpu}: {said}; its job.json is written{again}")
        if again:
            replaced[c.path] = f"replaces {said}"
    return replaced


def _classify(cells: list[PlannedCell], attempts: list[Attempt], retry: bool) -> None:
    """Each cell's state from what the sweep has stored: done, no capacity (not retried), or pending."""
    for c in cells:
        c.attempts = [a for a in attempts if a.cell_path == c.path]
        complete = [a for a in c.attempts if a.complete]
        if complete:
            c.state, c.run_id, c.cost_usd = "done", complete[-1].run_id, complete[-1].cost_usd
            c.note = f"stored run {c.run_id}"
            if complete[-1].finished != "ok":  # as its own call said: a setup not ok (an OOM is a result)
                c.exit_code = errors.SETUPS_NOT_OK
        elif c.attempts and c.attempts[-1].no_capacity and not retry:
            c.state, c.run_id, c.exit_code = "no capacity", c.attempts[-1].run_id, errors.JOB_NOT_SUCCEEDED
            c.note = f"run {c.run_id} found none; --retry-unavailable tries again"
        else:
            c.run_id = c.run.run_id


def _refuse_unfit(cells: list[PlannedCell], unfit: dict[str, str | None], source: str) -> None:
    """A cell whose GPU cannot run it is not launched (nor counted in the worst case): one line says why. When no
    cell is left to run or done, the plan is refused whole."""
    import sys

    refused = [c for c in cells if unfit.get(c.path) and c.state == "pending"]
    for c in refused:  # a cell with no result, as one whose GPU had no capacity
        c.state, c.note, c.exit_code = "unfit", unfit[c.path], errors.JOB_NOT_SUCCEEDED
    if refused and all(c.state == "unfit" for c in cells):
        raise LaunchError(f"plan {source}: no cell fits its GPU: " + "; ".join(
            f"{c.cell.label} on {c.cell.gpu}: {c.note}" for c in refused))
    for c in refused:
        sys.stderr.write(f"gpubench-launch: not running {c.cell.label} on {c.cell.gpu}: {c.note}\n")


def _settle(c: PlannedCell, outcome) -> None:
    """What the cell's job came to, from its outcome and the facts it stored."""
    import json

    c.exit_code, c.cost_usd, c.run_id = outcome.exit_code, outcome.cost_usd, outcome.run_id
    c.note = outcome.message or ""
    facts: dict = {}
    with contextlib.suppress(OSError, ValueError):
        facts = json.loads((Path(c.launch.results_dir) / outcome.run_id / "job.json").read_text())
    records = Path(c.launch.results_dir) / outcome.run_id / "results.jsonl"
    attempt = Attempt(c.path, outcome.run_id, started=facts.get("started_at") is not None, error=facts.get("error"),
                      finished=finished_status(records.read_text(errors="replace")) if records.is_file() else None)
    if attempt.complete:
        c.state = "done"
    elif attempt.no_capacity:
        c.state, c.note = "no capacity", facts.get("error") or c.note
    elif outcome.exit_code == errors.INTERRUPTED:
        c.state = "interrupted"
    elif outcome.exit_code == errors.LIMIT_REACHED:
        c.state = "stopped at the cap"
    else:
        c.state = outcome.status or "failed"


def _summary(plan: Plan, sweep_id: str, url: str, cells: list[PlannedCell], spent: float) -> dict:
    return {
        "sweep_id": sweep_id,
        "plan": plan.name,
        "max_usd": plan.max_usd,
        "store": url,
        "ended_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "spent_before_usd": round(spent, 6),
        "cells": [
            {"workload": c.cell.workload, "gpu": c.cell.gpu, "gpu_type": c.run.candidates[0].wire,
             "args": list(c.cell.args),
             "folder": c.path, "state": c.state, "run_id": c.run_id, "cost_usd": c.cost_usd,
             "note": c.note, "exit_code": c.exit_code}
            for c in cells
        ],
        "missing": [f"{c.cell.workload} on {c.cell.gpu}: {c.state}" for c in cells if c.state != "done"],
    }


# --- what a person sees -------------------------------------------------------------------------
def print_summary(view, summary: dict) -> None:
    from rich.table import Table

    table = Table(title=f"sweep {summary['sweep_id']}")
    for column in ("workload", "args", "GPU", "state", "run", "cost $"):
        table.add_column(column, overflow="fold")
    for cell in summary["cells"]:
        table.add_row(cell["workload"], " ".join(cell["args"]) or "-", cell["gpu_type"], cell["state"],
                      cell["run_id"] or "-", "-" if cell["cost_usd"] is None else f"{cell['cost_usd']:.4f}")
    view.console.print(table)
    for line in summary["missing"]:
        view.say(None, f"missing: {line}")
    view.say(None, f"sweep summary in {summary['stored']}")
