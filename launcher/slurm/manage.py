"""`status`, `logs`, `cancel` and `cleanup` for Slurm runs, by run id. A run is one task of a batch (a job of its
own, `812`, or a task of an array, `812_3`) whose side folder (slurm/<job name>/: the script, batch.json mapping run
id -> task, the exit files) lies beside a launch's run folders or under a sweep's folder (batch.py).

The task is found through what this host knows of the run (its state file's side folder while a launcher follows
it, its job.json's script after), else in the batches under the results folder, else in the side folders of this
user's gpubench jobs in squeue (launched from anywhere). Its state comes from squeue while the controller lists it
(pending, running, and ended for its MinJobAge), after that from the exit file its batch script wrote; its output
is in the side folder while it runs and in the run folder once it ended. Each answers None when it knows no such
run (another provider may)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import errors
from ..redact import Redactor
from . import commands
from .batch import Batch, BatchTask, batches_under
from .plan import COMMENT_PREFIX, comment_fields

TAGGED = COMMENT_PREFIX + ","  # every gpubench job's --comment starts so


@dataclass
class Found:
    task: BatchTask
    job: commands.SlurmJob | None  # as squeue shows it; None once the controller forgot it (or never had it)

    @property
    def job_id(self) -> str | None:
        return self.task.job_id

    @property
    def output(self) -> Path | None:
        return self.task.output() if self.job_id else None

    @property
    def exit_code(self) -> int | None:
        """What the task's exit file says, else what the controller says of an ended job."""
        end = self.task.ended()
        if end is not None:
            return end.exit_code
        return commands.exit_code(self.job_id) if self.job is not None and not self.job.live else None

    @property
    def live(self) -> bool:
        return self.job is not None and self.job.live

    @property
    def state(self) -> str:
        if self.job is not None:
            return self.job.status
        code = self.exit_code
        return "ended (no longer in squeue)" if code is None else f"ended, exit code {code} (no longer in squeue)"


def find(run_id: str, results_dir: str | None, evidence: dict[str, Any]) -> Found | None:
    task = _task(run_id, results_dir, evidence)
    if task is None:
        return None
    jobs = commands.queue([task.batch.name])
    if task.batch.job_id is None:  # a launcher killed between sbatch and noting its answer: found by the name
        ids = {j.array_job_id for j in jobs.values()}
        task.batch.job_id = ids.pop() if len(ids) == 1 else None
    return Found(task, jobs.get(task.job_id) if task.job_id else None)


def _task(run_id: str, results_dir: str | None, evidence: dict[str, Any]) -> BatchTask | None:
    sides = [Path(evidence["side"])] if evidence.get("side") else []  # a launcher's state file
    if evidence.get("script"):  # the run's job.json
        sides.append(Path(evidence["script"]).parent)
    for side in sides:
        if (task := _of(Batch.read(side), run_id)) is not None:
            return task
    root = Path(results_dir) if results_dir else None
    if root is not None and root.is_dir():  # a launch's batches (<results>/slurm/) and each sweep's
        for folder in [root, *sorted(p for p in root.iterdir() if p.is_dir())]:
            for batch in batches_under(folder):
                if (task := _of(batch, run_id)) is not None:
                    return task
    seen: set[Path] = set()
    for job in commands.tagged(TAGGED):  # launched from another folder: its script's side folder
        side = Path(job.script).parent
        if side not in seen:
            seen.add(side)
            if (task := _of(Batch.read(side), run_id)) is not None:
                return task
    return None


def _of(batch: Batch | None, run_id: str) -> BatchTask | None:
    return next((t for t in batch.tasks if t.run_id == run_id), None) if batch is not None else None


def run_of(job: commands.SlurmJob, batches: dict[Path, Batch | None]) -> str:
    """The run id of a gpubench job or array task: its comment's (a job of its own), else its batch.json's."""
    run_id = comment_fields(job.comment).get("run")
    if run_id:
        return run_id
    side = Path(job.script).parent
    if side not in batches:
        batches[side] = Batch.read(side)
    batch = batches[side]
    index = int(job.task) if job.task.isdigit() else 0
    return next((t.run_id for t in batch.tasks if t.index == index), "") if batch is not None else ""


def status(run_id: str, results_dir: str, evidence: dict[str, Any]) -> int | None:
    found = find(run_id, results_dir, evidence)
    if found is None:
        return None
    job = found.job
    out = sys.stdout
    out.write(f"run        {run_id}\n")
    out.write(f"job        slurm job {found.job_id or '-'}\n")
    out.write(f"status     {found.state}\n")
    if job is not None:
        out.write(f"partition  {job.partition}\nnodes      {job.nodes or '-'}\nelapsed    {job.elapsed}\n")
        if not job.live:
            out.write(f"exit_code  {found.exit_code}\n")
    output = found.output
    out.write(f"output     {output if output and output.is_file() else '-'}\n")
    folder = found.task.run_folder
    out.write(f"local      {folder if folder.is_dir() else '-'}\n")
    return errors.OK


async def logs(run_id: str, follow: bool, results_dir: str, evidence: dict[str, Any]) -> int | None:
    from ..pace import Pace
    from .job import OutputFollower

    found = await asyncio.to_thread(find, run_id, results_dir, evidence)
    if found is None:
        return None
    redact = Redactor()
    output = found.output
    if output is None or (not output.is_file() and not follow):
        sys.stderr.write(f"gpubench-launch: slurm job {found.job_id or '-'} has no output yet ({found.state})\n")
        return errors.OK
    pace = Pace.from_env()

    def emit(line: str) -> None:
        sys.stdout.write(redact(line) + "\n")
        sys.stdout.flush()

    follower = OutputFollower(output, emit)
    follower.read()
    while follow and found.live:
        await asyncio.sleep(pace.poll_s)
        follower.read()
        found = Found(found.task, await commands.call(commands.job, found.job_id))
        follower.path = found.output  # moved into the run folder once the job ended (the same bytes)
    follower.finish()
    return errors.OK


async def cancel(run_id: str, evidence: dict[str, Any]) -> int | None:
    """SIGINT to the job's steps (the run stores what it measured), then scancel for good; confirmed in squeue."""
    from ..pace import Pace

    found = await asyncio.to_thread(find, run_id, None, evidence)
    if found is None:
        return None
    if not found.live:
        sys.stderr.write(f"gpubench-launch: slurm job {found.job_id or '-'} already {found.state}\n")
        return errors.OK
    pace = Pace.from_env()
    if await stop(found.job, pace):
        ended = await commands.call(commands.job, found.job_id)
        sys.stderr.write(f"gpubench-launch: slurm job {found.job_id} stopped ({ended.status if ended else 'ended'})\n")
        return errors.OK
    sys.stderr.write(f"gpubench-launch: slurm job {found.job_id} not confirmed stopped: scancel {found.job_id}\n")
    return errors.LAUNCHER_TROUBLE


async def stop(job: commands.SlurmJob, pace) -> bool:
    """Cancel a job and read squeue until it shows as ended: a running one gets SIGINT first, for up to half the
    confirm time (at most 30 s), then scancel; whether it ended in time."""
    deadline = time.monotonic() + pace.confirm_timeout_s
    hard = time.monotonic() + min(30.0, pace.confirm_timeout_s / 2)
    signalled = killed = False
    while time.monotonic() < deadline:
        with contextlib.suppress(commands.SlurmError):
            if job.state != "RUNNING" or time.monotonic() >= hard:
                if not killed:
                    await commands.call(commands.cancel, job.job_id)
                    killed = True
            elif not signalled:
                await commands.call(commands.cancel, job.job_id, "INT")
                signalled = True
        now = await commands.call(commands.job, job.job_id)
        if now is None or not now.live:
            return True
        job = now
        await asyncio.sleep(min(1.0, pace.poll_s))
    return False


async def cleanup(provider: str, all_hosts: bool, dry_run: bool) -> int:
    """Live gpubench jobs and array tasks of this user whose launcher is gone: scancel each (or say the command,
    with --dry-run). A job whose state file names a live launcher is left alone; one with no state file here was
    launched from another host (or its state is gone): left alone unless --all."""
    from ..pace import Pace
    from ..state import all_states, launcher_alive

    states = {s["run_id"]: s for s in all_states() if "run_id" in s and s.get("provider") == provider}
    jobs = [j for j in await commands.call(commands.tagged, TAGGED) if j.live]
    batches: dict[Path, Batch | None] = {}
    runs = {job.job_id: run_of(job, batches) for job in jobs}
    pace = Pace.from_env()
    code, lines, stopped = errors.OK, [], set()
    for job in jobs:
        run_id = runs[job.job_id]
        state = states.get(run_id)
        attached = launcher_alive(state["launcher"]) if state and state.get("launcher") else None
        if attached:
            action = "left alone: its launcher is running"
        elif attached is None and not all_hosts:
            action = "left alone: launched from another host (use --all)"
        elif dry_run:
            action = f"would stop: scancel {job.job_id}"
        elif await stop(job, pace):
            action = "stopped"
            stopped.add(run_id)
        else:
            action, code = f"NOT confirmed stopped: scancel {job.job_id}", errors.LAUNCHER_TROUBLE
        lines.append(f"slurm job {job.job_id:22} run {run_id or '-':48} {job.state.lower():10} {action}")
    if not dry_run:  # the state files of dead launchers whose jobs ended
        live = set(runs.values()) - stopped
        for run_id, state in states.items():
            if run_id not in live and launcher_alive(state.get("launcher", "")) is not True:
                Path(state["_path"]).unlink(missing_ok=True)
    sys.stdout.write("\n".join(lines) + "\n" if lines else "gpubench-launch cleanup: no gpubench Slurm job is live\n")
    return code
