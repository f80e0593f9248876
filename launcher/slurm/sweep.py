"""What the Slurm provider does with a plan's GPU names and with a sweep's cells (slurm/provider.py calls it): GPU
names map to partitions (checked against `sinfo` before anything is submitted), the cap is GPU-hours (each task at
its --time, worst case), cells that ask the scheduler for the same thing (a partition, its GPUs and CPUs, --time,
exclusivity, the site's options) go in as one job array with a `%` throttle, one task per cell
(Slurm.submit_together), and what an earlier call submitted from this sweep's results folder is found in its side
folders (slurm/<job name>/batch.json) with its state from squeue or its exit file: followed when it still runs,
recorded (job.json) when it ended while no launcher ran.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from ..errors import LaunchError
from ..plan import GpuChoice
from ..provider import Ended, Left, Leftovers
from . import commands
from .batch import SIDE_DIR, Batch, BatchTask, Earlier, batches_under, run_parts
from .plan import SlurmConfig, comment_for, time_limit_minutes
from .plan import gpu_hours as job_gpu_hours


def gpu_choice(slurm_cfg: SlurmConfig, gpu: str, spec) -> GpuChoice:
    """A plan's GPU name through [slurm.gpus] (no prices: a cluster's GPUs are counted in GPU-hours)."""
    from ..plan import split_count

    name, count = split_count(gpu, spec.gpu_count)
    mapped = slurm_cfg.gpu(name)
    return GpuChoice(requested=mapped.name, gpu_type=mapped.name, count=count, rows=())


def check_partitions(slurm_cfg: SlurmConfig, asks: dict[str, int]) -> None:
    """Slurm's commands are here, the controller answers, and each mapped partition exists, is up and has nodes
    with the CPUs its jobs ask for (`asks`: GPU name -> the most CPUs a job on it asks for). One line, exit 2."""
    found = commands.partitions()
    for gpu in sorted(asks):
        partition = slurm_cfg.gpu(gpu).partition
        if partition not in found:
            raise LaunchError(f"{slurm_cfg.source}: [slurm.gpus] {gpu}: no partition {partition!r} on this cluster"
                              f" (partitions: {', '.join(sorted(found)) or 'none'})")
        if found[partition].avail != "up":
            raise LaunchError(f"{slurm_cfg.source}: partition {partition!r} is {found[partition].avail}, not up")
        cpus = found[partition].cpus
        if cpus is not None and asks[gpu] > cpus:
            raise LaunchError(f"{slurm_cfg.source}: a job on {gpu} asks for {asks[gpu]} CPUs (--cpus-per-task), but"
                              f" the nodes of partition {partition!r} have {cpus}: set [slurm] cpus_per_gpu for this"
                              " cluster")


def cpu_asks(launches) -> dict[str, int]:
    """GPU name -> the most CPUs one of these LaunchPlans' jobs asks for on it."""
    asks: dict[str, int] = {}
    for launch in launches:
        for run in launch.runs:
            choice = run.candidates[0]
            cpus = launch.settings.cpus(launch.workload, launch.smoke, choice.count)
            asks[choice.requested] = max(asks.get(choice.requested, 0), cpus)
    return asks


def attach(launch, slurm_cfg: SlurmConfig, expected_minutes: float, runtime_override: int | None) -> None:
    """Make a LaunchPlan batch jobs on this cluster: --time from what it runs."""
    launch.via, launch.settings = None, slurm_cfg
    launch.max_runtime_minutes = runtime_override or time_limit_minutes(expected_minutes, slurm_cfg.time_margin_minutes)


def gpu_hours(plan, run) -> float:
    """The most a run's job can use: its --time on its GPUs."""
    return job_gpu_hours(plan.max_runtime_minutes, run.candidates[0].count)


def sweep_root(plan) -> Path:
    """A sweep's results folder (<results>/<sweep id>), from one of its cells' plans: each cell's folder is
    <sweep root>/<workload>/<gpu>/<args key>; the arrays' side folders are <sweep root>/slurm/<job name>/."""
    folder = Path(plan.results_dir).resolve()
    return folder.parents[len(PurePosixPath(plan.extra_tags["gpubench_cell"]).parts) - 1]


# --- arrays --------------------------------------------------------------------------------------------
def plan_arrays(runs, slurm_cfg: SlurmConfig) -> list[Batch]:
    """A sweep's runs to submit (their LaunchPlan, RunPlan and store), as job arrays: those whose jobs ask for the
    same (partition, GPUs, CPUs, --time, exclusivity, the site's options) are one array, one task per run, at most
    array_throttle at once. A run that is no sweep's cell (a launch's) is left out: it is a job of its own."""
    arrays: dict[tuple[str, ...], Batch] = {}
    for plan, run, store in runs:
        sweep_id = plan.extra_tags.get("gpubench_sweep")
        if not sweep_id:
            continue
        options, command = run_parts(plan, run, store)
        batch = arrays.get(tuple(options))
        if batch is None:
            key = f"array-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
            batch = arrays[tuple(options)] = Batch(
                name=f"gpubench-{key}", side=sweep_root(plan) / SIDE_DIR / key, options=options, array=True,
                throttle=slurm_cfg.array_throttle, comment=comment_for({"gpubench_sweep": sweep_id}, array=key))
        batch.add(run.run_id, Path(plan.results_dir).resolve(), command, run.env, plan.extra_tags["gpubench_cell"])
    return list(arrays.values())


# --- what an earlier call left -------------------------------------------------------------------------
@dataclass
class LeftBehind:
    task: BatchTask
    state: commands.SlurmJob | None  # squeue's, None once it left the queue

    @property
    def live(self) -> bool:
        return self.state is not None and self.state.live


def left_behind(root: Path, ended: set[str]) -> list[LeftBehind]:
    """The tasks earlier calls submitted from this sweep's results folder whose runs have no job.json in the store
    (a launcher died, or was stopped, before their jobs ended), with their state: one squeue call for them all."""
    batches = [b for b in batches_under(root) if any(t.run_id not in ended for t in b.tasks)]
    if not batches:
        return []
    states = commands.queue(sorted({b.name for b in batches}))
    for b in batches:
        if b.job_id is None:  # the launcher died between sbatch and noting its answer: the job is found by name
            ids = {j.array_job_id for j in states.values() if j.name == b.name}
            if len(ids) == 1:
                b.submitted(ids.pop())
    return [LeftBehind(t, states.get(t.job_id)) for b in batches if b.job_id for t in b.tasks
            if t.run_id not in ended]


def adopt(cells: dict, pending: set[str], left: list[LeftBehind]) -> Leftovers:
    """A pending cell with a task an earlier call left that still runs follows it (the newest) rather than
    submitting again. Every other task of a cell of the plan that ended is `ended`, to be recorded
    (Slurm.record_ended): one that finished while no launcher ran gets its job.json; one that failed or was
    cancelled too, and its cell, if still without a result, is submitted again (its note says so)."""
    from .job import job_facts

    by_cell: dict[str, list[LeftBehind]] = {}
    for lb in left:
        by_cell.setdefault(lb.task.cell, []).append(lb)
    found = Leftovers()
    for path, plan in cells.items():
        mine = by_cell.get(path, [])
        live = [lb for lb in mine if lb.live]
        if path in pending and live:
            lb = live[-1]
            found.follow[path] = Left(lb.task.run_id, Earlier(lb.task),
                                      f"slurm job {lb.task.job_id} ({lb.state.status}) from an earlier call")
        found.ended += [Ended(path, lb.task.run_id, lb,
                              used=job_facts(lb.task, plan, plan.runs[0], lb.state, lb.state)["gpu_hours"])
                        for lb in mine if not lb.live]
    return found


def print_matrix(plan, sweep_id: str, url: str, cells, slurm_cfg: SlurmConfig, spent_hours: float,
                 stores: dict, checked: str | None, arrays: list[Batch]) -> None:
    """--dry-run: each array's sbatch options and each task's job command, and what the cells wait for."""
    from rich.table import Table

    from ..show import _console

    console = _console()
    console.print(f"sweep         {sweep_id} (plan {plan.source})", markup=False)
    console.print(f"store         {url}/", markup=False)
    console.print(f"cluster       Slurm; the job's gpubench: {slurm_cfg.way}", markup=False)
    table = Table(title="cells (one array task each)")
    for column in ("workload", "GPU", "partition", "request", "CPUs", "--time", "state", "GPU-h max"):
        table.add_column(column, overflow="fold")
    worst = 0.0
    for c in cells:
        choice = c.run.candidates[0]
        gpu = slurm_cfg.gpu(choice.requested)
        request = " ".join(gpu.request(choice.count)[1:]) or "(the partition)"
        cpus = slurm_cfg.cpus(c.launch.workload, c.launch.smoke, choice.count)
        alone = " excl." if slurm_cfg.is_exclusive(c.launch.smoke) else ""
        table.add_row(c.cell.workload, gpu.name, gpu.partition, request, f"{cpus}{alone}",
                      f"{c.launch.max_runtime_minutes} min", c.state, f"{gpu_hours(c.launch, c.run):.2f}")
        if c.to_launch:
            worst += gpu_hours(c.launch, c.run)
    console.print(table)
    for batch in arrays:
        label = f"array of {len(batch.tasks)} (at most {batch.throttle} at once)"
        console.print(f"{label}:", markup=False)
        console.print(f"  sbatch {' '.join(batch.sbatch_options())}", markup=False, soft_wrap=True)
        for task in batch.tasks:
            console.print(f"  task {task.index} ({task.cell}): {' '.join(task.command)}", markup=False,
                          soft_wrap=True)  # whole lines: commands to copy
    launching = sum(c.to_launch for c in cells)
    cap = f"; max_gpu_hours {slurm_cfg.max_gpu_hours:g}" if slurm_cfg.max_gpu_hours is not None else ""
    used = f", plus {spent_hours:.2f} used by stored runs" if spent_hours else ""
    jobs = f" in {len(arrays)} array job{'s' if len(arrays) != 1 else ''}" if arrays else ""
    console.print(f"to submit     {launching} of {len(cells)} cells{jobs}: at most {worst:.2f} GPU-hours{used}{cap}",
                  markup=False)
    if checked:
        console.print(checked, markup=False)
    console.print("dry run: nothing was submitted", markup=False)
