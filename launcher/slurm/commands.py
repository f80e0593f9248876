"""The Slurm commands the launcher runs: sbatch, squeue, scancel, sinfo, scontrol. Nothing else talks to Slurm.

Answers are read in forms every Slurm since 20.11 prints alike: `sbatch --parsable` (the job id), and `squeue`
and `sinfo` with an explicit `--format` whose free-text field (the comment) comes last. Accounting (`sacct`) is
not needed: a finished job stays in `squeue --states=all` for the controller's MinJobAge, and the job writes its
own exit code beside its output for later. Every call has a timeout; a controller that does not answer is one
line (LaunchError, exit 2 before anything is submitted).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import LaunchError

TIMEOUT_S = float(os.environ.get("GPUBENCH_SLURM_TIMEOUT_S", "30"))
_FIELDS = ("%i", "%T", "%r", "%P", "%N", "%M", "%j", "%o", "%k")  # the comment last: it may hold any text
LIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING",
        "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD")


class SlurmError(LaunchError):
    """Slurm refused a command or did not answer."""


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str  # why it is pending (Resources, Priority, ...) or how it ended; "None" when nothing to say
    partition: str
    nodes: str
    elapsed: str
    name: str
    script: str  # its batch script's path (squeue's "command")
    comment: str

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def status(self) -> str:
        """What the live view shows: the state, with Slurm's reason while it waits."""
        state = self.state.lower()
        if self.state == "PENDING" and self.reason not in ("", "None", "(null)"):
            return f"{state}: {self.reason}"
        return state


def _run(args: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    if shutil.which(args[0]) is None:
        raise SlurmError(f"Slurm is not installed here: no {args[0]} on PATH")
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout or TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"Slurm is not answering: {args[0]} took over {timeout or TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        raise SlurmError(f"{args[0]}: {_last_line(done.stderr) or f'exit code {done.returncode}'}")
    return done


def _last_line(text: str) -> str:
    """Slurm's own message, without its 'sbatch: error:' prefixes (the first error line says why)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    if not errors:
        return ""
    line = errors[-1]
    for prefix in ("sbatch: error: ", "squeue: error: ", "scancel: error: ", "sinfo: error: ", "scontrol: error: "):
        line = line.removeprefix(prefix)
    return " ".join(line.split())


def partitions() -> dict[str, str]:
    """The cluster's partitions and whether each is up: also the check that the controller answers."""
    try:
        out = _run(["sinfo", "--noheader", "--format=%R|%a"]).stdout
    except SlurmError as exc:
        raise SlurmError(f"Slurm is not answering ({exc})") from None
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, _, avail = line.strip().partition("|")
        if name:
            found[name] = avail
    return found


def submit(script: str, chdir: str) -> str:
    """sbatch the script (its #SBATCH lines hold every option); the job id."""
    out = _run(["sbatch", "--parsable", f"--chdir={chdir}", script]).stdout.strip()
    job_id = out.split(";")[0]  # "ID" or "ID;CLUSTER"
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered {out!r}, not a job id")
    return job_id


def jobs(prefix: str) -> list[SlurmJob]:
    """This user's jobs (pending, running, and ended within MinJobAge) whose comment starts with prefix."""
    args = ["squeue", "--noheader", "--states=all", f"--user={_user()}", "--format=" + "|".join(_FIELDS)]
    found = []
    for line in _run(args).stdout.splitlines():
        parts = line.split("|", len(_FIELDS) - 1)
        if len(parts) != len(_FIELDS):
            continue
        job = SlurmJob(*(p.strip() for p in parts))
        if job.comment.startswith(prefix):
            found.append(job)
    return found


def job(job_id: str) -> SlurmJob | None:
    """One job as squeue shows it; None once the controller forgot it (after MinJobAge)."""
    args = ["squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=" + "|".join(_FIELDS)]
    try:
        out = _run(args).stdout
    except SlurmError as exc:
        if "Invalid job id" in str(exc):
            return None
        raise
    for line in out.splitlines():
        parts = line.split("|", len(_FIELDS) - 1)
        if len(parts) == len(_FIELDS) and parts[0].strip() == job_id:
            return SlurmJob(*(p.strip() for p in parts))
    return None


def cancel(job_id: str, signal: str | None = None) -> None:
    """scancel: with a signal (INT), sent to the job's steps so `gpubench run` stores what it measured;
    without, the job is ended (SIGTERM, then SIGKILL after the cluster's KillWait)."""
    _run(["scancel", *([f"--signal={signal}"] if signal else []), job_id])


def exit_code(job_id: str) -> int | None:
    """The job's exit code as the controller has it (scontrol), None once it forgot the job."""
    try:
        out = _run(["scontrol", "show", "job", "--oneliner", job_id]).stdout
    except SlurmError:
        return None
    for field in out.split():
        if field.startswith("ExitCode="):
            code, _, _signal = field.removeprefix("ExitCode=").partition(":")
            return int(code) if code.isdigit() else None
    return None


def _user() -> str:
    import getpass

    return getpass.getuser()


async def call(fn, *args):
    """A Slurm command off the event loop."""
    return await asyncio.to_thread(fn, *args)
