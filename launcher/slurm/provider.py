"""Slurm as a provider (provider.Provider): an owned cluster's GPUs, one batch job per run on the partition the
`[slurm]` table maps its GPU name to (`plan.py`), run and followed by `job.py`. Nothing is billed: a sweep's cap is
GPU-hours (each job to its --time). What a killed launcher left is found by the jobs' comments in squeue; status,
logs, cancel and cleanup by run id are `manage.py`."""

from __future__ import annotations

import asyncio
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

from ..errors import LaunchError
from ..provider import GPU_HOURS, Left, Provider
from .plan import TABLE, SlurmConfig, describe_batch, parse_slurm


def load_cluster(path: str, python: str | None) -> SlurmConfig:
    """`--slurm FILE`: a file holding a [slurm] table, as a sweep plan does."""
    where = f"cluster file {path}"
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LaunchError(f"cannot read {where}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LaunchError(f"{where}: not a TOML file: {exc}") from None
    if TABLE not in data:
        raise LaunchError(f"{where}: no [slurm] table (README: Your own cluster)")
    return parse_slurm(data[TABLE], where, python)


def configured() -> bool:
    """Whether a Slurm client here can reach a cluster: its commands and a configuration."""
    conf = os.environ.get("SLURM_CONF") or next(
        (p for p in ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf") if Path(p).is_file()), None)
    return shutil.which("squeue") is not None and conf is not None


class Slurm(Provider):
    name = "slurm"
    title = "Slurm"
    reached_by = "a Slurm client (squeue with SLURM_CONF or /etc/slurm/slurm.conf)"
    cap_unit = GPU_HOURS

    def __init__(self, cluster: SlurmConfig | None):
        self.cluster = cluster  # None: looking runs up by id only
        self.limit = cluster.max_gpu_hours if cluster else None

    @classmethod
    def from_launch(cls, options) -> Slurm:
        return cls(load_cluster(options.provider_options["slurm"], options.provider_options.get("slurm_python")))

    @classmethod
    def from_plan(cls, table: Any, plan, options) -> Slurm:
        return cls(parse_slurm(table, f"plan {plan.source}", options.provider_options.get("slurm_python")))

    @classmethod
    def for_run(cls, evidence: dict[str, Any]) -> Slurm | None:
        return cls(None) if evidence.get("provider") == cls.name or configured() else None

    # --- what a run needs against what it offers -------------------------------------------------------------------
    async def offer(self, gpu: str, spec):
        from .sweep import gpu_choice

        return gpu_choice(self.cluster, gpu, spec)

    def shape(self, plan, options) -> None:
        from ..plan import new_runs
        from .sweep import attach

        plan.provider = self.name
        # A batch job asks for one partition: one run per GPU, never fallbacks.
        plan.runs = new_runs(plan.workload, [c for run in plan.runs for c in run.candidates], each=True)
        attach(plan, self.cluster, plan.workload.expected(plan.smoke), options.max_runtime_minutes)

    async def check(self, plans: list, dry_run: bool) -> str | None:
        from .sweep import check_partitions

        names = {run.candidates[0].requested for plan in plans for run in plan.runs}
        try:
            await asyncio.to_thread(check_partitions, self.cluster, names)
        except LaunchError as exc:
            if not dry_run or "not installed" not in str(exc):
                raise
            return f"partitions not checked: {exc}"
        return None

    def worst_case(self, plan, run) -> float:
        from .sweep import gpu_hours

        return gpu_hours(plan, run)

    def over_cap(self, plan, worst: float, spent: float) -> str | None:
        from .sweep import over_gpu_hours

        return over_gpu_hours(self.cluster, worst, spent)

    # --- printing ----------------------------------------------------------------------------------------------------
    def print_plan(self, plan, store, note: str | None) -> None:
        from ..show import _console

        console = _console()
        console.print(f"workload      {plan.workload.name} ({plan.workload.title})", markup=False)
        console.print(f"cluster       Slurm; the job's gpubench: {self.cluster.way}", markup=False)
        console.print(f"command       {plan.command}", markup=False)
        for run in plan.runs:
            console.print(f"{run.run_id} on {run.candidates[0].requested}:", markup=False)
            for line in describe_batch(plan, run, store):
                console.print(line, markup=False, soft_wrap=True)  # whole lines: commands to copy
        if note:
            console.print(note, markup=False)
        console.print("dry run: nothing was submitted", markup=False)

    def print_sweep(self, plan, sweep_id: str, url: str, cells: list, spent: float, stores: dict,
                    note: str | None) -> None:
        from .sweep import print_matrix

        print_matrix(plan, sweep_id, url, cells, self.cluster, spent, stores, note)

    # --- running -----------------------------------------------------------------------------------------------------
    def runner(self, launch, run, adopt: Any = None):
        from .job import SlurmRun

        return SlurmRun(launch, run, adopt=adopt)

    async def left_behind(self, sweep_id: str, stored: set[str], cells: dict) -> dict[str, Left]:
        from .sweep import adopt, left_behind

        return adopt(cells, await asyncio.to_thread(left_behind, sweep_id, stored))

    # --- by run id ---------------------------------------------------------------------------------------------------
    async def status(self, run_id: str, results_dir: str) -> int | None:
        from .manage import status

        return await asyncio.to_thread(status, run_id, results_dir)

    async def logs(self, run_id: str, follow: bool, results_dir: str) -> int | None:
        from .manage import logs

        return await logs(run_id, follow, results_dir)

    async def cancel(self, run_id: str) -> int | None:
        from .manage import cancel

        return await cancel(run_id)

    def not_found(self, run_id: str) -> str:
        return f"no Slurm job for run id {run_id!r} (squeue, or its .slurm/ folder here)"

    async def cleanup(self, all_hosts: bool, dry_run: bool) -> int:
        from .manage import cleanup

        return await cleanup(self.name, all_hosts, dry_run)
