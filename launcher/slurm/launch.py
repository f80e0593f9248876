"""`gpubench-launch WORKLOAD --slurm CLUSTER.toml --gpu H100`: one run per --gpu, each a batch job on the partition
the cluster file's [slurm.gpus] maps it to (the file is a [slurm] table, as in a sweep plan). Checked whole
before anything is submitted; the rest is the launcher's own machinery (run_launches, one view, one Ctrl-C)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from .. import errors
from ..errors import LaunchError
from .plan import SlurmConfig, describe_batch, parse_slurm


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
    from .sweep import attach, check_partitions, gpu_choice

    cluster = load_cluster(o.slurm, o.slurm_python)
    gpus = [gpu_choice(cluster, g, spec) for g in o.gpus]
    if len({g.gpu_type for g in gpus}) < len(gpus):
        raise LaunchError("the same GPU twice")
    checked = None
    try:
        await asyncio.to_thread(check_partitions, cluster, {g.gpu_type for g in gpus})
    except LaunchError as exc:
        if not o.dry_run or "not installed" not in str(exc):
            raise
        checked = f"partitions not checked: {exc}"
    plan = build_plan(o, spec, setups, "job", gpus, None, store)
    plan.runs = [run for g in gpus for run in _one_run_each(plan, g)]  # a batch job asks for one partition
    attach(plan, cluster, spec.expected(o.smoke), o.max_runtime_minutes)
    if o.dry_run:
        _print(plan, cluster, store, checked)
        return errors.OK
    await check_store(store, plan.runs[0].run_id, redact)
    return await run_plan(None, plan, pace, redact, store, o.verbose)


def _one_run_each(plan, gpu):
    from ..plan import new_runs

    return new_runs(plan.workload, [gpu], each=True)


def _print(plan, cluster: SlurmConfig, store, checked: str | None) -> None:
    from ..show import _console

    console = _console()
    console.print(f"workload      {plan.workload.name} ({plan.workload.title})", markup=False)
    console.print(f"cluster       Slurm; the job's gpubench: {cluster.way}", markup=False)
    console.print(f"command       {plan.command}", markup=False)
    for run in plan.runs:
        console.print(f"{run.run_id} on {run.candidates[0].requested}:", markup=False)
        for line in describe_batch(plan, run, store):
            console.print(line, markup=False, soft_wrap=True)  # whole lines: commands to copy
    if checked:
        console.print(checked, markup=False)
    console.print("dry run: nothing was submitted", markup=False)
