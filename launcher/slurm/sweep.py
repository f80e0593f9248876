"""A sweep whose plan has a [slurm] table: the same cells, store, resume and view as on Runcrate (sweep/run.py), each
cell one batch job on the cluster. What differs is here: GPU names map to partitions (checked against `sinfo`
before anything is submitted), the cap is GPU-hours (each job at its --time, worst case), and the jobs a killed
launcher left are found by their comment in `squeue` (which lists ended jobs for the controller's MinJobAge).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LaunchError
from ..plan import GpuChoice
from ..provider import Left
from . import commands
from .plan import (
    SIDE_DIR,
    SlurmConfig,
    comment_fields,
    describe_batch,
    time_limit_minutes,
)


def gpu_choice(slurm_cfg: SlurmConfig, gpu: str, spec) -> GpuChoice:
    """A plan's GPU name through [slurm.gpus] (no prices: a cluster's GPUs are counted in GPU-hours)."""
    from ..plan import split_count

    name, count = split_count(gpu, spec.gpu_count)
    mapped = slurm_cfg.gpu(name)
    return GpuChoice(requested=mapped.name, gpu_type=mapped.name, count=count, rows=())


def check_partitions(slurm_cfg: SlurmConfig, names: set[str]) -> None:
    """Each mapped partition exists and is up, asking the controller (one line, exit 2, when it does not answer)."""
    found = commands.partitions()
    for gpu in sorted(names):
        partition = slurm_cfg.gpu(gpu).partition
        if partition not in found:
            raise LaunchError(f"{slurm_cfg.source}: [slurm.gpus] {gpu}: no partition {partition!r} on this cluster"
                              f" (partitions: {', '.join(sorted(found)) or 'none'})")
        if found[partition] != "up":
            raise LaunchError(f"{slurm_cfg.source}: partition {partition!r} is {found[partition]}, not up")


def attach(launch, slurm_cfg: SlurmConfig, expected_minutes: float, runtime_override: int | None) -> None:
    """Make a LaunchPlan batch jobs on this cluster: --time from what it runs."""
    launch.via, launch.settings = None, slurm_cfg
    launch.max_runtime_minutes = runtime_override or time_limit_minutes(expected_minutes, slurm_cfg.time_margin_minutes)


def gpu_hours(plan, run) -> float:
    """The most a run's job can use: its --time on its GPUs."""
    return plan.max_runtime_minutes / 60 * run.candidates[0].count


def over_gpu_hours(slurm_cfg: SlurmConfig, worst: float, spent: float) -> str | None:
    if slurm_cfg.max_gpu_hours is None or spent + worst <= slurm_cfg.max_gpu_hours + 1e-9:
        return None
    already = f" plus {spent:.2f} already used" if spent else ""
    return (f"{slurm_cfg.source}: the worst case {worst:.2f} GPU-hours (each job to its --time){already} is over"
            f" [slurm] max_gpu_hours {slurm_cfg.max_gpu_hours:g}; nothing was submitted: raise it, drop cells, or"
            " lower time_margin_minutes")


def left_behind(sweep_id: str, stored: set[str]) -> dict[str, list[commands.SlurmJob]]:
    """The sweep's jobs in squeue whose runs are not stored as ended (a launcher died following them), by cell."""
    found: dict[str, list[commands.SlurmJob]] = {}
    for job in commands.jobs("gpubench,"):
        fields = comment_fields(job.comment)
        if fields.get("sweep") == sweep_id and fields.get("run") and fields["run"] not in stored:
            found.setdefault(fields.get("cell", ""), []).append(job)
    return found


def adopt(cells: dict, left: dict[str, list[commands.SlurmJob]]) -> dict[str, Left]:
    """A pending cell (path -> its plan) with a job an earlier call left, live or completed, follows it (the newest)
    rather than submitting again; one that failed, timed out or was cancelled is submitted again. Only jobs whose
    batch script lies under this call's results folder: their output is where this call reads it."""
    chosen = {}
    for path, plan in cells.items():
        side = Path(plan.results_dir).resolve() / SIDE_DIR
        jobs = sorted((j for j in left.get(path, []) if (j.live or j.state == "COMPLETED")
                       and Path(j.script).parent.parent == side), key=lambda j: int(j.job_id))
        if jobs:
            job = jobs[-1]
            chosen[path] = Left(comment_fields(job.comment)["run"], job,
                                f"slurm job {job.job_id} ({job.status}) from an earlier call")
    return chosen


def print_matrix(plan, sweep_id: str, url: str, cells, slurm_cfg: SlurmConfig, spent_hours: float,
                 stores: dict, checked: str | None) -> None:
    """--dry-run: each cell's sbatch command, its script's job command, and what it waits for."""
    from rich.table import Table

    from ..show import _console

    console = _console()
    console.print(f"sweep         {sweep_id} (plan {plan.source})", markup=False)
    console.print(f"store         {url}/", markup=False)
    console.print(f"cluster       Slurm; the job's gpubench: {slurm_cfg.way}", markup=False)
    table = Table(title="cells (one batch job each)")
    for column in ("workload", "GPU", "partition", "request", "--time", "state", "GPU-h max"):
        table.add_column(column, overflow="fold")
    worst = 0.0
    for c in cells:
        gpu = slurm_cfg.gpu(c.run.candidates[0].requested)
        request = " ".join(gpu.request(c.run.candidates[0].count)[1:]) or "(the partition)"
        table.add_row(c.cell.workload, gpu.name, gpu.partition, request, f"{c.launch.max_runtime_minutes} min",
                      c.state, f"{gpu_hours(c.launch, c.run):.2f}")
        if c.to_launch:
            worst += gpu_hours(c.launch, c.run)
    console.print(table)
    for c in cells:
        if c.to_launch:
            console.print(f"{c.cell.label} on {c.run.candidates[0].requested}:", markup=False)
            for line in describe_batch(c.launch, c.run, stores.get(c.path)):
                console.print(line, markup=False, soft_wrap=True)  # whole lines: commands to copy
    launching = sum(c.to_launch for c in cells)
    cap = f"; max_gpu_hours {slurm_cfg.max_gpu_hours:g}" if slurm_cfg.max_gpu_hours is not None else ""
    used = f", plus {spent_hours:.2f} used by stored runs" if spent_hours else ""
    console.print(f"to submit     {launching} of {len(cells)} cells: at most {worst:.2f} GPU-hours{used}{cap}",
                  markup=False)
    if checked:
        console.print(checked, markup=False)
    console.print("dry run: nothing was submitted", markup=False)
