"""`gpubench-launch WORKLOAD --slurm CLUSTER.toml --gpu H100`: one run per --gpu, each a batch job on the partition
the cluster file's [slurm.gpus] maps it to (the file is a [slurm] table, as in a sweep plan). Checked whole
before anything is submitted; the rest is the launcher's own machinery (run_launches, one view, one Ctrl-C)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from .. import errors
from ..errors import LaunchError
from .plan import SlurmConfig, gpu_hours, over_gpu_hours, parse_slurm


def load_cluster(path: str, python: str | None) -> SlurmConfig:
    where = f"cluster file {path}"
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LaunchError(f"cannot read {where}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LaunchError(f"{where}: not a TOML file: {exc}") from None
    if "slurm" not in data:
        raise LaunchError(f"{where}: no [slurm] table (README: Your own cluster)")
    return parse_slurm(data["slurm"], where, python)


async def launch_on_slurm(o, spec, setups, store, pace, redact) -> int:
    from ..launch import build_plan, check_store, run_plan
    from .sweep import attach, check_partitions, cpu_asks, gpu_choice

    cluster = load_cluster(o.slurm, o.slurm_python)
    gpus = [gpu_choice(cluster, g, spec) for g in o.gpus]
    if len({g.gpu_type for g in gpus}) < len(gpus):
        raise LaunchError("the same GPU twice")
    plan = build_plan(o, spec, setups, "job", gpus, None, store)
    plan.runs = [run for g in gpus for run in _one_run_each(plan, g)]  # a batch job asks for one partition
    attach(plan, cluster, spec.expected(o.smoke), o.max_runtime_minutes)
    checked = None
    try:
        await asyncio.to_thread(check_partitions, cluster, cpu_asks([plan]))
    except LaunchError as exc:
        if not o.dry_run or "not installed" not in str(exc):
            raise
        checked = f"partitions not checked: {exc}"
    worst = sum(gpu_hours(plan.max_runtime_minutes, run.candidates[0].count) for run in plan.runs)
    over = over_gpu_hours(cluster, worst)
    if o.dry_run:
        _print(plan, cluster, store, checked, worst)
        if over:
            raise LaunchError(over)
        return errors.OK
    if over:  # before anything is submitted
        raise LaunchError(over)
    await check_store(store, plan.runs[0].run_id, redact)
    return await run_plan(None, plan, pace, redact, store, o.verbose)


def _one_run_each(plan, gpu):
    from ..plan import new_runs

    return new_runs(plan.workload, [gpu], each=True)


def _print(plan, cluster: SlurmConfig, store, checked: str | None, worst: float) -> None:
    from ..show import _console
    from .batch import task_of_its_own

    console = _console()
    console.print(f"workload      {plan.workload.name} ({plan.workload.title})", markup=False)
    console.print(f"cluster       Slurm; the job's gpubench: {cluster.way}", markup=False)
    console.print(f"command       {plan.command}", markup=False)
    for run in plan.runs:
        console.print(f"{run.run_id} on {run.candidates[0].requested}:", markup=False)
        for line in describe_task(task_of_its_own(plan, run, store), plan.max_runtime_minutes):
            console.print(line, markup=False, soft_wrap=True)  # whole lines: commands to copy
    cap = f"; max_gpu_hours {cluster.max_gpu_hours:g}" if cluster.max_gpu_hours is not None else ""
    console.print(f"to submit     {len(plan.runs)} job{'s' if len(plan.runs) != 1 else ''}: at most {worst:.2f}"
                  f" GPU-hours (each to its --time){cap}", markup=False)
    if checked:
        console.print(checked, markup=False)
    console.print("dry run: nothing was submitted", markup=False)


def describe_task(task, minutes: int) -> list[str]:
    """What --dry-run prints of one run's batch job: its sbatch options, its command, what it waits for."""
    options = task.batch.options
    request = " ".join(o for o in options if o.startswith(("--gres=", "--gpus="))) or "a node"
    partition = next(o.split("=", 1)[1] for o in options if o.startswith("--partition="))
    return [f"  sbatch {' '.join(task.batch.sbatch_options())}", f"  runs   {' '.join(task.command)}",
            f"  waits  for {request} in partition {partition}, then up to {minutes} min"]
