"""The Slurm commands the launcher runs: sbatch, squeue, scancel, sinfo, scontrol. Nothing else talks to Slurm.

Answers are read in forms every Slurm since 20.11 prints alike: `sbatch --parsable` (the job id), and `squeue`
and `sinfo` with an explicit `--format` whose free-text field (the comment) comes last. Accounting (`sacct`) is
not needed: a finished job stays in `squeue --states=all` for the controller's MinJobAge, and the job writes its
own exit file beside its output for later (batch.py). Every call has a timeout; a controller that does not answer
is one line (LaunchError, exit 2 before anything is submitted).

A job array's tasks are listed one per line (`squeue --array`): each task's id is `ARRAY_TASK` (`2_0`), as
scancel takes it; a job of its own is its number.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import LaunchError

TIMEOUT_S = float(os.environ.get("GPUBENCH_SLURM_TIMEOUT_S", "30"))
# %i the job (or array task) id, %F the array's job id, %K the task index, %S the start time (actual once started),
# %o the batch script's path; the comment last: it may hold any text.
_FIELDS = ("%i", "%F", "%K", "%T", "%r", "%P", "%N", "%M", "%S", "%j", "%o", "%k")
LIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING",
        "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD")
TOOLS = ("sbatch", "squeue", "scancel", "sinfo")  # what a launch needs on this machine (scontrol is optional)


class SlurmError(LaunchError):
    """Slurm refused a command or did not answer."""


@dataclass(frozen=True)
class SlurmJob:
    job_id: str  # "123", or "123_4" for task 4 of array 123
    array_job_id: str  # "123" (a job of its own: its own id)
    task: str  # "4", or "N/A"
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str  # why it is pending (Resources, Priority, ...) or how it ended; "None" when nothing to say
    partition: str
    nodes: str
    elapsed: str
    start: str  # ISO local time it started (or is expected to: only meaningful once it ran); "N/A" when unknown
    name: str
    script: str  # its batch script's path (squeue's "command")
    comment: str

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def ran(self) -> bool:
        """Whether it got a node (a job cancelled while pending never did)."""
        return self.nodes not in ("", "(null)") and self.state != "PENDING"

    @property
    def status(self) -> str:
        """What the live view shows: the state, with Slurm's reason while it waits."""
        state = self.state.lower()
        if self.state == "PENDING" and self.reason not in ("", "None", "(null)"):
            return f"{state}: {self.reason}"
        return state


def missing_tools() -> list[str]:
    """The Slurm commands a launch needs that are not on PATH."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _run(args: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    if shutil.which(args[0]) is None:
        raise SlurmError(f"Slurm is not installed here: no {args[0]} on PATH (run gpubench-launch on a login node)")
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


@dataclass(frozen=True)
class Partition:
    name: str
    avail: str  # "up", "down", "drain", "inact"
    cpus: int | None  # CPUs of its nodes (the smallest), None when sinfo does not say


def partitions() -> dict[str, Partition]:
    """The cluster's partitions, whether each is up and its nodes' CPUs: also the check that the controller
    answers. A Slurm command missing here is SlurmError saying so; a controller that does not answer, saying that."""
    missing = missing_tools()
    if missing:
        raise SlurmError(f"Slurm is not installed here: no {', '.join(missing)} on PATH (run gpubench-launch on a"
                         " login node, where sbatch and squeue work)")
    try:
        out = _run(["sinfo", "--noheader", "--format=%R|%a|%c"]).stdout
    except SlurmError as exc:
        raise SlurmError(f"Slurm is not answering: {str(exc).removeprefix('Slurm is not answering: ')}") from None
    found: dict[str, Partition] = {}
    for line in out.splitlines():
        name, _, rest = line.strip().partition("|")
        avail, _, cpus = rest.partition("|")
        digits = cpus.strip().rstrip("+")
        if name:
            found[name] = Partition(name, avail, int(digits) if digits.isdigit() else None)
    return found


def submit(script: str, chdir: str) -> str:
    """sbatch the script (its #SBATCH lines hold every option, --array included); the job id (an array's)."""
    out = _run(["sbatch", "--parsable", f"--chdir={chdir}", script]).stdout.strip()
    job_id = out.split(";")[0]  # "ID" or "ID;CLUSTER"
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered {out!r}, not a job id")
    return job_id


def _parse(out: str) -> list[SlurmJob]:
    found = []
    for line in out.splitlines():
        parts = line.split("|", len(_FIELDS) - 1)
        if len(parts) == len(_FIELDS):
            found.append(SlurmJob(*(p.strip() for p in parts)))
    return found


def _squeue(*selection: str) -> list[SlurmJob]:
    args = ["squeue", "--noheader", "--array", "--states=all", f"--user={_user()}", *selection,
            "--format=" + "|".join(_FIELDS)]
    return _parse(_run(args).stdout)


def queue(names: list[str]) -> dict[str, SlurmJob]:
    """This user's jobs with these names (pending, running, and ended within MinJobAge), each array task on its
    own, by job id: one squeue call for all of a launcher's jobs. A job not in the answer has left the queue."""
    if not names:
        return {}
    return {job.job_id: job for job in _squeue(f"--name={','.join(sorted(set(names)))}")}


def job(job_id: str) -> SlurmJob | None:
    """One job (or array task: `12_3`) as squeue shows it; None once the controller forgot it (after MinJobAge)."""
    try:
        found = _squeue(f"--jobs={job_id}")
    except SlurmError as exc:
        if "Invalid job id" in str(exc):
            return None
        raise
    return next((j for j in found if j.job_id == job_id), None)


def tagged(prefix: str) -> list[SlurmJob]:
    """This user's jobs (each array task on its own; pending, running, and ended within MinJobAge) whose comment
    starts with prefix: gpubench's, whatever folder they were launched from."""
    return [j for j in _squeue() if j.comment.startswith(prefix)]


def cancel(job_ids: list[str] | str, signal: str | None = None) -> None:
    """scancel: with a signal (INT), sent to the jobs' steps so `gpubench run` stores what it measured;
    without, the jobs are ended (SIGTERM, then SIGKILL after the cluster's KillWait)."""
    ids = [job_ids] if isinstance(job_ids, str) else list(job_ids)
    _run(["scancel", *([f"--signal={signal}"] if signal else []), *ids])


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
