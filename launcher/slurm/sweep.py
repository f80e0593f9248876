"""A sweep whose plan has a [slurm] table: the same cells, store, resume and view as on Runcrate (sweep/run.py), each
cell one batch job on the cluster. What differs is here: GPU names map to partitions (checked against `sinfo`
before anything is submitted), the cap is GPU-hours (each job at its --time, worst case), and the jobs a killed
launcher left are found by their comment in `squeue` (which lists ended jobs for the controller's MinJobAge).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LaunchError
from ..plan import GpuChoice
from . import commands
from .plan import (
    SIDE_DIR,
    SlurmConfig,
    comment_fields,
    describe_batch,
    parse_slurm,
    time_limit_minutes,
)


def slurm_config(plan, python: str | None) -> SlurmConfig | None:
    if plan.slurm is None:
        if python:
            raise LaunchError(f"plan {plan.source}: --slurm-python needs a [slurm] table in the plan"
                              " (the partitions its GPU names map to)")
        return None
    return parse_slurm(plan.slurm, f"plan {plan.source}", python)


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
    """Make a cell's LaunchPlan a batch job: via slurm, --time from what the cell runs."""
    launch.via, launch.slurm = "slurm", slurm_cfg
    launch.max_runtime_minutes = runtime_override or time_limit_minutes(expected_minutes, slurm_cfg.time_margin_minutes)
    for run in launch.runs:
        run.env = launch.env_for(run)


def gpu_hours(cell) -> float:
    """The most a cell's job can use: its --time on its GPUs."""
    return cell.launch.max_runtime_minutes / 60 * cell.run.candidates[0].count


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


def adopt(cells, left: dict[str, list[commands.SlurmJob]]) -> None:
    """A pending cell with a job an earlier call left, live or completed, follows it (the newest) rather than
    submitting again; one that failed, timed out or was cancelled is submitted again. Only jobs whose batch script
    lies under this call's results folder: their output is where this call reads it."""
    for c in cells:
        side = Path(c.launch.results_dir).resolve() / SIDE_DIR
        jobs = sorted((j for j in left.get(c.path, []) if (j.live or j.state == "COMPLETED")
                       and Path(j.script).parent.parent == side), key=lambda j: int(j.job_id))
        if c.state == "pending" and jobs:
            c.adopt, c.state = jobs[-1], "follow"
            c.run.run_id = c.run_id = comment_fields(c.adopt.comment)["run"]
            c.run.env = c.launch.env_for(c.run)
            c.note = f"slurm job {c.adopt.job_id} ({c.adopt.status}) from an earlier call"


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
                      c.state, f"{gpu_hours(c):.2f}")
        if c.to_launch:
            worst += gpu_hours(c)
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
