"""Slurm as a provider (provider.Provider): an owned cluster's GPUs, on the partition the `[slurm]` table maps each
GPU name to (`plan.py`). A launch's run is a batch job of its own; a sweep's cells that ask the scheduler for the
same thing are one job array, submitted together (`submit_together`, `sweep.plan_arrays`), one task per cell; each
run (a job or a task) is followed by `job.py`, all of a call's jobs through one squeue answer per poll
(`queue.py`). Every submission leaves a side folder (`batch.py`: slurm/<job name>/ with the script and batch.json,
run id -> task). Nothing is billed: the cap is GPU-hours (each job to its --time), for a sweep and for a launch
alike. What a killed launcher left is found in its sweep's side folders; status, logs, cancel and cleanup by run id
are `manage.py`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

from ..errors import LaunchError
from ..provider import GPU_HOURS, Ended, Leftovers, Provider
from .plan import TABLE, SlurmConfig, parse_slurm


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

    def __init__(self, cluster: SlurmConfig | None, evidence: dict[str, Any] | None = None):
        from .queue import SlurmQueue

        self.cluster = cluster  # None: looking runs up by id only
        self.limit = cluster.max_gpu_hours if cluster else None
        self.evidence = evidence or {}  # for_run's: what this host knows of the run looked up (its side folder)
        self.queue = SlurmQueue()  # the call's one squeue answer per poll, for every job it follows
        self.followed: dict[str, str] = {}  # run id -> every job (or task) this call's runners followed

    @classmethod
    def from_launch(cls, options) -> Slurm:
        return cls(load_cluster(options.provider_options["slurm"], options.provider_options.get("slurm_python")))

    @classmethod
    def from_plan(cls, table: Any, plan, options) -> Slurm:
        return cls(parse_slurm(table, f"plan {plan.source}", options.provider_options.get("slurm_python")))

    @classmethod
    def for_run(cls, evidence: dict[str, Any]) -> Slurm | None:
        return cls(None, evidence) if evidence.get("provider") == cls.name or configured() else None

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
        from .sweep import check_partitions, cpu_asks

        try:
            await asyncio.to_thread(check_partitions, self.cluster, cpu_asks(plans))
        except LaunchError as exc:
            if not dry_run or "not installed" not in str(exc):
                raise
            return f"partitions not checked: {exc}"
        return None

    def worst_case(self, plan, run) -> float:
        from .sweep import gpu_hours

        return gpu_hours(plan, run)

    def refusal(self, plan, worst: float, spent: float) -> str:
        already = f" plus {spent:.2f} already used" if spent else ""
        return (f"{self.cluster.source}: the worst case {worst:.2f} GPU-hours (each job to its --time){already} is"
                f" over [slurm] max_gpu_hours {self.limit:g}; nothing was submitted: raise it, drop runs, or lower"
                " time_margin_minutes")

    # --- printing ----------------------------------------------------------------------------------------------------
    def print_plan(self, plan, store, note: str | None) -> None:
        from ..show import _console
        from .batch import task_of_its_own

        console = _console()
        console.print(f"workload      {plan.workload.name} ({plan.workload.title})", markup=False)
        console.print(f"cluster       Slurm; the job's gpubench: {self.cluster.way}", markup=False)
        console.print(f"command       {plan.command}", markup=False)
        for run in plan.runs:
            console.print(f"{run.run_id} on {run.candidates[0].requested}:", markup=False)
            for line in _describe(task_of_its_own(plan, run, store), plan.max_runtime_minutes):
                console.print(line, markup=False, soft_wrap=True)  # whole lines: commands to copy
        worst = sum(self.worst_case(plan, run) for run in plan.runs)
        cap = f"; max_gpu_hours {self.limit:g}" if self.limit is not None else ""
        console.print(f"to submit     {len(plan.runs)} job{'s' if len(plan.runs) != 1 else ''}: at most {worst:.2f}"
                      f" GPU-hours (each to its --time){cap}", markup=False)
        if note:
            console.print(note, markup=False)
        console.print("dry run: nothing was submitted", markup=False)

    def print_sweep(self, plan, sweep_id: str, url: str, cells: list, spent: float, stores: dict,
                    note: str | None) -> None:
        from .sweep import plan_arrays, print_matrix

        arrays = plan_arrays([(c.launch, c.run, stores.get(c.path)) for c in cells if c.state == "pending"],
                             self.cluster)
        print_matrix(plan, sweep_id, url, cells, self.cluster, spent, stores, note, arrays)

    # --- running -----------------------------------------------------------------------------------------------------
    def runner(self, launch, run, adopt: Any = None):
        from .job import SlurmRun

        return SlurmRun(launch, run, adopt=adopt)

    async def submit_together(self, launches: list) -> dict[str, Any]:
        """A sweep's cells as job arrays (sweep.plan_arrays), each sent with one sbatch before the runs start: every
        task's run gets its task as `Submitted` (a launch's runs are left out: each is a job of its own). An array
        sbatch refuses leaves nothing; its runs say why. A Ctrl-C stops the sending (the runs not sent say so); an
        error part-way cancels the arrays already sent."""
        from . import commands
        from .batch import Submitted
        from .queue import submit
        from .sweep import plan_arrays

        arrays = plan_arrays([(launch.plan, run, launch.store) for launch, run in launches], self.cluster)
        if not arrays:
            return {}
        first = launches[0][0]
        sent = []
        try:
            for batch in arrays:
                if first.interrupted.is_set():
                    break
                for task in batch.tasks:
                    first.view.update(task.run_id, status="submitting")
                with contextlib.suppress(commands.SlurmError):  # refused: batch.refused, said by each of its runs
                    await submit(batch, str(batch.side), self.queue)
                    sent.append(batch)
        except BaseException:
            if sent:
                with contextlib.suppress(Exception):
                    await asyncio.shield(commands.call(commands.cancel, [b.job_id for b in sent]))
            raise
        return {task.run_id: Submitted(task) for batch in arrays for task in batch.tasks}

    def stop_command(self, live: dict[str, str]) -> str:
        """scancel with every job this call followed, not only those still in `live`: one the first Ctrl-C already
        stopped costs nothing to name (scancel of an ended job does nothing), and a launcher that quits at once
        cannot know which ended since."""
        ids = list(dict.fromkeys(self.followed.values()))
        return f"scancel {' '.join(ids)}" if ids else super().stop_command(live)

    # --- what an earlier call left -----------------------------------------------------------------------------------
    async def left_behind(self, sweep_id: str, stored: set[str], cells: dict, pending: set[str]) -> Leftovers:
        """The tasks earlier calls submitted from this sweep's folder (its side folders' batch.json) whose runs are
        not stored, from one squeue call: live ones are followed, ended ones recorded."""
        from .sweep import adopt, left_behind, sweep_root

        if not cells:
            return Leftovers()
        root = sweep_root(next(iter(cells.values())))
        return adopt(cells, pending, await asyncio.to_thread(left_behind, root, stored))

    async def record_ended(self, ended: Ended, plan, store, redact) -> str:
        """Its job.json from squeue or its exit file (with its failed setups' own errors), its output beside the
        results, the folder stored."""
        from .job import settle

        lb = ended.job
        facts = await asyncio.to_thread(settle, lb.task, plan, plan.runs[0], lb.state, store, redact)
        said = f"slurm job {lb.task.job_id} from an earlier call {facts['state'].lower()}"
        return f"{said}: {facts['error']}" if facts["error"] else said

    # --- by run id ---------------------------------------------------------------------------------------------------
    async def status(self, run_id: str, results_dir: str) -> int | None:
        from .manage import status

        return await asyncio.to_thread(status, run_id, results_dir, self.evidence)

    async def logs(self, run_id: str, follow: bool, results_dir: str) -> int | None:
        from .manage import logs

        return await logs(run_id, follow, results_dir, self.evidence)

    async def cancel(self, run_id: str) -> int | None:
        from .manage import cancel

        return await cancel(run_id, self.evidence)

    def not_found(self, run_id: str) -> str:
        return f"no Slurm job for run id {run_id!r} (squeue, or a slurm/ side folder here)"

    async def cleanup(self, all_hosts: bool, dry_run: bool) -> int:
        from .manage import cleanup

        return await cleanup(self.name, all_hosts, dry_run)


def _describe(task, minutes: int) -> list[str]:
    """What --dry-run prints of one run's batch job: its sbatch options, its command, what it waits for."""
    options = task.batch.options
    request = " ".join(o for o in options if o.startswith(("--gres=", "--gpus="))) or "a node"
    partition = next(o.split("=", 1)[1] for o in options if o.startswith("--partition="))
    return [f"  sbatch {' '.join(task.batch.sbatch_options())}", f"  runs   {' '.join(task.command)}",
            f"  waits  for {request} in partition {partition}, then up to {minutes} min"]
