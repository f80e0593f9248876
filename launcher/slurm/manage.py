"""`status`, `logs`, `cancel` and `cleanup` for Slurm runs, by run id. The job is found by its comment
(`gpubench,run=<run id>,...`) in `squeue --states=all` while the controller lists it (pending, running, and ended
for its MinJobAge); after that by what the launcher left beside the run's results: `.slurm/<run id>/` with the batch
script, the job id, the output file and the exit file the job writes last. Each answers None when it knows no such
run (another provider may)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import errors
from ..redact import Redactor
from . import commands
from .plan import SIDE_DIR, comment_fields

SWEEP_DEPTH = 4  # a sweep's runs are <results>/<sweep id>/<workload>/<gpu>/<args key>/<run id>


@dataclass
class Found:
    run_id: str
    job_id: str | None
    job: commands.SlurmJob | None  # as squeue shows it; None once the controller forgot it
    side: Path | None  # <results dir>/.slurm/<run id>/

    @property
    def output(self) -> Path | None:
        return self.side / f"slurm-{self.job_id}.out" if self.side and self.job_id else None

    @property
    def exit_code(self) -> int | None:
        """What the job wrote last (its exit file), else what the controller says."""
        if self.side and self.job_id:
            with contextlib.suppress(OSError, ValueError):
                return int((self.side / f"exit-{self.job_id}").read_text().strip())
        return commands.exit_code(self.job_id) if self.job is not None else None

    @property
    def live(self) -> bool:
        return self.job is not None and self.job.live

    @property
    def state(self) -> str:
        if self.job is not None:
            return self.job.status
        code = self.exit_code
        return "ended (no longer in squeue)" if code is None else f"ended, exit code {code} (no longer in squeue)"


def find(run_id: str, results_dir: str) -> Found | None:
    jobs = [j for j in commands.jobs("gpubench,") if comment_fields(j.comment).get("run") == run_id]
    job = max(jobs, key=lambda j: int(j.job_id.split("_")[0])) if jobs else None
    side = Path(job.script).parent if job is not None and job.script not in ("", "(null)") else None
    if side is None or not side.is_dir():
        side = local_side(results_dir, run_id)
    if job is None and side is None:
        return None
    job_id = job.job_id if job is not None else None
    if job_id is None:
        with contextlib.suppress(OSError):
            job_id = (side / "job_id").read_text().strip() or None
    return Found(run_id, job_id, job, side)


def local_side(results_dir: str, run_id: str) -> Path | None:
    """The run's .slurm/<run id>/ folder under the results folder (a launch's, or a sweep's cell's)."""
    root = Path(results_dir)
    for depth in range(SWEEP_DEPTH + 1):
        for path in root.glob("*/" * depth + f"{SIDE_DIR}/{run_id}"):
            if path.is_dir():
                return path
    return None


def status(run_id: str, results_dir: str) -> int | None:
    found = find(run_id, results_dir)
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
    folder = found.side.parent.parent / run_id if found.side else None
    out.write(f"local      {folder if folder and folder.is_dir() else '-'}\n")
    return errors.OK


async def logs(run_id: str, follow: bool, results_dir: str) -> int | None:
    from ..pace import Pace
    from .job import OutputFollower

    found = await asyncio.to_thread(find, run_id, results_dir)
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
        found = await asyncio.to_thread(find, run_id, results_dir)
    follower.finish()
    return errors.OK


async def cancel(run_id: str) -> int | None:
    """SIGINT to the job's steps (the run stores what it measured), then scancel for good; confirmed in squeue."""
    from ..pace import Pace

    found = await asyncio.to_thread(find, run_id, ".")
    if found is None:
        return None
    if not found.live:
        sys.stderr.write(f"gpubench-launch: slurm job {found.job_id} already {found.state}\n")
        return errors.OK
    pace = Pace.from_env()
    if await stop(found.job, pace):
        ended = await asyncio.to_thread(commands.job, found.job_id)
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
    """Live gpubench jobs of this user whose launcher is gone: scancel each (or say the command, with --dry-run).
    A job whose state file names a live launcher is left alone; one with no state file here was launched from
    another host (or its state is gone): left alone unless --all."""
    from ..pace import Pace
    from ..state import all_states, launcher_alive

    states = {s["run_id"]: s for s in all_states() if "run_id" in s and s.get("provider") == provider}
    jobs = [j for j in await commands.call(commands.jobs, "gpubench,") if j.live]
    pace = Pace.from_env()
    code, lines, stopped = errors.OK, [], set()
    for job in jobs:
        run_id = comment_fields(job.comment).get("run", "")
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
        live = {comment_fields(j.comment).get("run") for j in jobs} - stopped
        for run_id, state in states.items():
            if run_id not in live and launcher_alive(state.get("launcher", "")) is not True:
                Path(state["_path"]).unlink(missing_ok=True)
    sys.stdout.write("\n".join(lines) + "\n" if lines else "gpubench-launch cleanup: no gpubench Slurm job is live\n")
    return code
