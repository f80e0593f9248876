"""`gpubench-launch sweep PLAN.toml`: every cell of a plan (a workload with its arguments, on one GPU type) as
one job, all at once, through the launcher's own machinery (run_launches: one view, one request budget, one
Ctrl-C), under the plan's one dollar cap, into one store prefix per sweep.

Resuming is reading: the store (or the local results folder) says which cells have complete results, the
API's job tags (gpubench_sweep, gpubench_cell) say which jobs a killed launcher left behind. The same call
again launches only the cells with neither, and follows the left-behind jobs instead of paying for them
twice. A cell whose GPU type had no capacity is reported, and tried again only with --retry-unavailable
(or in another sweep), so a second call after a complete sweep launches nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import errors
from ..errors import LaunchError
from ..redact import Redactor
from ..runcrate.client import api_errors, describe, make_client
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
    slurm_python: str | None = None  # a [slurm] plan: the job's gpubench is this Python environment on the nodes


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
    return asyncio.run(_sweep(o))


async def _sweep(o: SweepOptions) -> int:
    from gpubench.gpu_fit import why_unfit
    from gpubench.stores import StoreError, check_local_dir, parse_store

    from ..launch import LaunchOptions, build_plan, check_store, fetch_types, run_launches
    from ..pace import Pace
    from ..plan import GpuChoice, resolve_gpu, resolve_workload
    from ..progress import ProgressView
    from ..slurm import sweep as slurm_sweep

    plan = load_plan(o.plan)
    cluster = slurm_sweep.slurm_config(plan, o.slurm_python)  # None: Runcrate
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

    # A dry run without an API key (a fork's CI) still checks the plan; GPU names and prices need the API.
    offline = cluster is None and o.dry_run and not os.environ.get("RUNCRATE_API_KEY")
    client = None if offline or cluster else make_client()
    try:
        types = None if offline or cluster else await fetch_types(client, redact)
        cells: list[PlannedCell] = []
        unfit: dict[str, str | None] = {}  # cell path -> why its GPU cannot run it (gpubench/gpu_fit.py)
        for cell in plan.cells:
            spec = resolve_workload(cell.workload)
            # first-matmul times an instance's launch on Runcrate, as `gpubench-launch first-matmul` does; on a
            # cluster every study is a batch job.
            via = "instance" if spec.via == "instance" and not cluster else "job"
            deployment, study = ("container", spec.name) if via == "instance" else (None, None)
            if offline:
                choice = GpuChoice(requested=cell.gpu, gpu_type=cell.gpu, count=spec.gpu_count, rows=())
            elif cluster:
                try:
                    choice = slurm_sweep.gpu_choice(cluster, cell.gpu, spec)
                except LaunchError as exc:
                    raise LaunchError(f"{cell.label}: {exc}") from None
            else:
                try:
                    choice = await resolve_gpu(client, cell.gpu, types, spec.gpu_count, deployment)
                except LaunchError as exc:
                    raise LaunchError(f"plan {o.plan}: {cell.label}: {exc}") from None
            path = f"{spec.name}/{choice.wire.replace(':', 'x')}/{cell.args_key}"
            options = LaunchOptions(
                workload=spec.name, gpus=(cell.gpu,), each=True, via=via, study=study, smoke=cell.smoke,
                setups=",".join(cell.setups) if cell.setups else None, repeats=cell.repeats,
                overrides=cell.overrides, weights=cell.weights, results_dir=str(where.root / path),
                capacity_wait=plan.capacity_wait_minutes, max_runtime_minutes=plan.max_runtime_minutes,
            )
            launch = build_plan(options, spec, list(cell.setups) if cell.setups else None, via, [choice], deployment,
                                where.cell_store(path))
            launch.extra_tags = {"gpubench_sweep": sweep_id, "gpubench_cell": path}
            if cluster:
                slurm_sweep.attach(launch, cluster, spec.expected(cell.smoke), plan.max_runtime_minutes)
            cells.append(PlannedCell(cell, path, launch))
            unfit[path] = why_unfit(spec, choice.gpu_type, choice.count, cell.setups, cell.smoke)
        checked = None
        if cluster:  # the partitions exist and the controller answers, before anything is submitted
            try:
                await asyncio.to_thread(slurm_sweep.check_partitions, cluster,
                                        slurm_sweep.cpu_asks(c.launch for c in cells))
            except LaunchError as exc:
                if not o.dry_run or "not installed" not in str(exc):
                    raise
                checked = f"partitions not checked: {exc}"
        try:
            attempts = await asyncio.to_thread(where.attempts)
        except StoreError as exc:
            raise LaunchError(redact(str(exc))) from None
        _classify(cells, attempts, o.retry_unavailable)
        _refuse_unfit(cells, unfit, o.plan)
        if cluster:
            return await _sweep_slurm(o, plan, sweep_id, where, cells, attempts, cluster, pace, redact, checked)
        spent = sum(a.cost_usd for a in attempts)
        worst = sum(c.launch.worst_cost(c.run) or 0.0 for c in cells if c.to_launch)
        over = spent + worst > plan.max_usd + 1e-9
        if o.dry_run:
            print_matrix(plan, sweep_id, where.url, cells, spent, offline)
            if over:
                raise LaunchError(_over_cap(plan, worst, spent))
            return errors.OK
        if over:  # before any request that could start or bill anything
            raise LaunchError(_over_cap(plan, worst, spent))
        _adopt(cells, await _left_behind(client, sweep_id, {a.run_id for a in attempts if a.ended}, redact))
        todo = [c for c in cells if c.to_launch]
        view = ProgressView(verbose=o.verbose)
        for c in cells:
            if not c.to_launch:
                view.say(None, f"{c.cell.label} on {c.cell.gpu}: {c.state} ({c.note})")
        outcomes = []
        if todo:
            await check_store(where.cell_store(todo[0].path), todo[0].run.run_id, redact)
            for c in todo:
                if c.adopt is not None:  # the killed launcher's partial folder: the job's log is read again
                    shutil.rmtree(Path(c.launch.results_dir) / c.run.run_id, ignore_errors=True)
            from ..context import SharedCap

            outcomes = await run_launches(
                client, [(c.launch, where.cell_store(c.path)) for c in todo], pace, redact, view,
                adopt={c.run.run_id: c.adopt for c in todo if c.adopt is not None},
                cap=SharedCap(plan.max_usd - spent))
            view.summary(outcomes)
        for c, outcome in zip(todo, outcomes, strict=True):
            _settle(c, outcome)
    finally:
        if client is not None:
            await client.close()
    return await _finish(plan, sweep_id, where, cells, spent, view, redact)


async def _sweep_slurm(o: SweepOptions, plan: Plan, sweep_id: str, where: SweepStore, cells: list[PlannedCell],
                       attempts: list[Attempt], cluster, pace, redact, checked: str | None) -> int:
    """The rest of a [slurm] sweep: its cap in GPU-hours, what earlier calls left (followed, or recorded when it
    ended unfollowed), the cells to submit as job arrays, then the run itself."""
    from ..launch import check_store, run_launches
    from ..progress import ProgressView
    from ..slurm import job as slurm_job
    from ..slurm import sweep as slurm_sweep

    for c in cells:
        c.cost_usd = None  # an owned cluster's jobs cost no dollars here; GPU-hours are in each job.json
    spent = sum(a.gpu_hours for a in attempts)
    stores = {c.path: where.cell_store(c.path) for c in cells}
    root = where.root.resolve()
    if o.dry_run:
        arrays = slurm_sweep.plan_arrays(cells, cluster, sweep_id, root, stores)
        over = slurm_sweep.over_gpu_hours(cluster, sum(slurm_sweep.gpu_hours(c) for c in cells if c.to_launch), spent)
        slurm_sweep.print_matrix(plan, sweep_id, where.url, cells, cluster, spent, stores, checked, arrays)
        if over:
            raise LaunchError(over)
        return errors.OK
    ended = {a.run_id for a in attempts if a.ended}
    left = await asyncio.to_thread(slurm_sweep.left_behind, root, ended)
    to_settle = slurm_sweep.adopt(cells, left)
    settled_hours = sum(slurm_job.job_facts(lb.task, c.launch, c.run, lb.state, lb.state)["gpu_hours"]
                        for c, lb in to_settle)
    over = slurm_sweep.over_gpu_hours(cluster, sum(slurm_sweep.gpu_hours(c) for c in cells if c.to_launch),
                                      spent + settled_hours)
    if over:
        raise LaunchError(over)
    view = ProgressView(verbose=o.verbose)
    replaced: dict[str, str] = {}
    for c, lb in to_settle:  # ended while no launcher followed it: its job.json now, from squeue or its exit file
        facts = await asyncio.to_thread(slurm_job.settle, lb.task, c.launch, c.run, lb.state, stores[c.path], redact)
        said = f"slurm job {lb.task.job_id} from an earlier call {facts['state'].lower()}"
        said += f": {facts['error']}" if facts["error"] else ""
        again = "; submitting the cell again" if c.state == "pending" else ""
        view.say(None, f"{c.cell.label} on {c.cell.gpu}: {said}; its job.json is written{again}")
        if again:
            replaced[c.path] = f"replaces {said}"
    slurm_sweep.plan_arrays(cells, cluster, sweep_id, root, stores)
    todo = [c for c in cells if c.to_launch]
    for c in cells:
        if not c.to_launch:
            view.say(None, f"{c.cell.label} on {c.cell.gpu}: {c.state} ({c.note})")
        elif c.adopt is not None:
            view.say(None, f"{c.cell.label} on {c.cell.gpu}: {c.note}")
    outcomes = []
    if todo:
        await check_store(where.cell_store(todo[0].path), todo[0].run.run_id, redact)
        outcomes = await run_launches(None, [(c.launch, where.cell_store(c.path)) for c in todo], pace, redact, view,
                                      adopt={c.run.run_id: c.adopt for c in todo if c.adopt is not None})
        if not any(out.launched for out in outcomes) and all(out.exit_code == errors.BAD_INPUT for out in outcomes):
            raise LaunchError(outcomes[0].message)  # sbatch refused them all: nothing was submitted or written
        for out in outcomes:  # one refused while others ran: that cell has no result (3), the sweep did run
            if not out.launched and out.exit_code == errors.BAD_INPUT:
                out.exit_code = errors.JOB_NOT_SUCCEEDED
        view.summary(outcomes)
    for c, outcome in zip(todo, outcomes, strict=True):
        _settle(c, outcome)
        if c.path in replaced:
            c.note = "; ".join(n for n in (replaced[c.path], c.note) if n)
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


async def _left_behind(client, sweep_id: str, stored: set[str], redact) -> dict[str, list]:
    """The sweep's jobs whose runs are not in the store (a launcher died before storing them), by cell."""
    found: dict[str, list] = {}
    try:
        async for job in client.jobs.list_all(tags={"gpubench_sweep": sweep_id}):
            run_id = job.tags.get("gpubench_run_id")
            if job.tags.get("gpubench_sweep") == sweep_id and run_id and run_id not in stored:
                found.setdefault(job.tags.get("gpubench_cell", ""), []).append(job)
    except api_errors() as exc:
        raise LaunchError(f"cannot list the sweep's jobs: {describe(exc, redact)}") from None
    return found


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


def _adopt(cells: list[PlannedCell], left: dict[str, list]) -> None:
    """A pending cell with a job that a killed launcher left, still live or succeeded, follows that job (the newest)
    instead of paying again; one that failed or was cancelled (say by `gpubench-launch cleanup`) is run again."""
    for c in cells:
        jobs = sorted((j for j in left.get(c.path, []) if not j.finished or j.status == "succeeded"),
                      key=lambda j: str(j.created_at))
        if c.state == "pending" and jobs:
            c.adopt, c.state = jobs[-1], "follow"
            c.run.run_id = c.run_id = c.adopt.tags["gpubench_run_id"]
            c.run.env = c.launch.env_for(c.run)
            c.note = f"job {c.adopt.id} ({c.adopt.status}) from an earlier call"


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


def _over_cap(plan: Plan, worst: float, spent: float) -> str:
    already = f" plus ${spent:.2f} already spent" if spent else ""
    return (f"plan {plan.source}: the worst case ${worst:.2f} (each cell's safety net at its dearest region){already}"
            f" is over max_usd ${plan.max_usd:g}; nothing was launched: raise max_usd, drop cells, or lower"
            " max_runtime_minutes")


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
def print_matrix(plan: Plan, sweep_id: str, url: str, cells: list[PlannedCell], spent: float,
                 offline: bool = False) -> None:
    from rich.table import Table

    from ..show import _console

    console = _console()
    console.print(f"sweep         {sweep_id} (plan {plan.source})", markup=False)
    console.print(f"store         {url}/", markup=False)
    nets = {c.cell.workload: c.launch.max_runtime_minutes for c in cells}
    console.print("safety net    " + ", ".join(f"{w} {m} min" for w, m in nets.items()) + " (each job's max runtime)",
                  markup=False)
    commands: dict[str, int] = {}
    for c in cells:  # one line per workload and arguments, numbered; the table refers to it
        if c.launch.command not in commands:
            commands[c.launch.command] = len(commands) + 1
            console.print(f"{f'[{commands[c.launch.command]}]':14}{c.launch.command}", markup=False)
    table = Table(title="cells (one job each)")
    for column in ("", "workload", "GPU", "state", "$/h", "exp. $", "max $"):
        table.add_column(column, justify="right" if "$" in column else "left", overflow="fold")
    expected_total = worst_total = 0.0
    for c in cells:
        run = c.run
        expected, worst = c.launch.expected_cost(run), c.launch.worst_cost(run)
        if c.to_launch:
            expected_total += expected or 0.0
            worst_total += worst or 0.0
        price = run.candidates[0].price
        table.add_row(f"[{commands[c.launch.command]}]", c.cell.workload, run.candidates[0].wire, c.state,
                      "-" if price is None else f"{price:.2f}", "-" if expected is None else f"{expected:.2f}",
                      "-" if worst is None else f"{worst:.2f}")
    console.print(table)
    launching = sum(c.to_launch for c in cells)
    costs = "costs unknown" if offline else f"expected ${expected_total:.2f}, at most ${worst_total:.2f}" + (
        f", plus ${spent:.2f} spent by stored runs" if spent else "")
    console.print(f"to launch     {launching} of {len(cells)} cells: {costs}; max_usd ${plan.max_usd:g}", markup=False)
    console.print("exp. $        expected minutes of the run (smoke for --smoke), cheapest region",
                  markup=False)
    console.print("max $         the safety net at the dearest region: what max_usd must cover", markup=False)
    if offline:
        console.print("no RUNCRATE_API_KEY: the plan is valid, but its GPU names, prices and cap were not checked"
                      " against /instances/types", markup=False)
    console.print("dry run: nothing was launched", markup=False)


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
