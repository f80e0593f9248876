"""The Slurm path: one run as one batch job (or one task of an array). Submit it (or follow one an earlier call
submitted), read its output file as it grows through the same record stream the Runcrate path reads, show Slurm's
state (pending with its reason, running, ended), and at the end add the job's facts (job.json) and Slurm's output
file to the run folder the job wrote itself.

How it ended comes from squeue while the controller lists the job, and from the exit file its batch script wrote
once the controller has forgotten it (MinJobAge): a job that left the queue is never judged by the last state a
poll happened to see.

A job this call submitted is never left running by this call: Ctrl-C and any error cancel it, first with SIGINT to
its steps (`gpubench run` records `interrupted` and stores what it measured), then for good if it does not end.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpubench.run.ingest import LineAssembler
from gpubench.schema import SetupResult

from .. import errors
from ..context import Launch
from ..plan import RunPlan
from ..results import RunFolder, RunOutcome
from ..state import LaunchState
from . import commands
from .batch import BatchTask, Earlier, Submitted, TaskEnd
from .plan import SIGINT_BEFORE_LIMIT_S
from .queue import submit

ENDED_OK = "COMPLETED"
KILLED = ("CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")  # no exit file


def slurm_noise(line: str) -> bool:
    """srun's and slurmstepd's own lines ("srun: error: node: task 0: Exited with exit code 1"): they come last in
    a failed job's output and never say why."""
    return line.startswith(("srun: ", "slurmstepd: "))


class OutputFollower:
    """A job's output file read as it grows (it lives on the filesystem the nodes share), cut into whole lines."""

    def __init__(self, path: Path, on_line):
        self.path = path
        self.offset = 0
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.assembler = LineAssembler(on_line)

    def read(self) -> int:
        """Read what was added since the last read; how many bytes."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return 0
        self.offset += len(data)
        self.assembler.feed(self._decode.decode(data))
        return len(data)

    def finish(self) -> None:
        self.read()
        self.assembler.feed(self._decode.decode(b"", final=True))
        self.assembler.flush()


class SlurmRun:
    """One run as a batch job of its own (`adopt` None: this runner submits it), as a task of an array this call
    submitted with others (`Submitted`: Slurm.submit_together), or as a task an earlier call left (`Earlier`:
    followed again, never submitted, not timed)."""

    def __init__(self, launch: Launch, run: RunPlan, adopt: Submitted | Earlier | None = None):
        from .batch import task_of_its_own

        self.launch = launch
        self.run = run
        self.earlier = isinstance(adopt, Earlier)
        self.task: BatchTask = adopt.task if adopt is not None else task_of_its_own(launch.plan, run, launch.store)
        self.queue = launch.provider.queue  # the call's one squeue answer per poll
        self.view = launch.view
        self.pace = launch.pace
        self.run_id = run.run_id
        self.state: commands.SlurmJob | None = None  # squeue's answer when the follow ended; None: it left the queue
        self.seen: commands.SlurmJob | None = None  # the last answer that listed it
        self.stopped_by: str | None = None
        self.cancel_confirmed: bool | None = None
        self.submitted_at: float | None = None  # monotonic, when this call submitted it (None when followed again)
        self.times: dict[str, float] = {}  # submit -> running -> first ok result (first-matmul's whole question)
        self.notes: list[str] = []

    @property
    def job_id(self) -> str | None:
        return self.task.job_id

    async def execute(self) -> RunOutcome:
        plan = self.launch.plan
        started = time.monotonic()
        batch = self.task.batch
        self.queue.watch(batch.name)
        folder = RunFolder(str(self.task.results_dir), self.run_id, {}, self.view, self.launch.redact, mirror=True)
        if not self.earlier:
            if self.launch.interrupted.is_set() and batch.job_id is None:  # (an array already in: follow its task)
                return RunOutcome(self.run_id, errors.INTERRUPTED, "not launched", launched=False,
                                  message="interrupted before the job was submitted")
            if batch.job_id is None:
                self.view.update(self.run_id, status="submitting")
            try:  # a job of its own is submitted here; an array submit_together sent answers at once
                await submit(batch, str(batch.side), self.queue)
            except commands.SlurmError as exc:
                self.view.update(self.run_id, status="refused")
                return RunOutcome(self.run_id, errors.BAD_INPUT, "refused", message=str(exc), launched=False)
            self.submitted_at = batch.submitted_at
        state = LaunchState(self.run_id)  # cleanup's: whether a launcher still follows the job
        state.save(provider=plan.provider, kind="slurm job", job_id=self.job_id, job_name=batch.name,
                   side=str(batch.side))
        self.launch.live[self.run_id] = f"slurm job {self.job_id}"
        self.launch.provider.followed[self.run_id] = self.job_id  # named by a second Ctrl-C's scancel line
        gpu = plan.settings.gpu(self.run.candidates[0].requested)
        what = f"task {self.task.index} of array {batch.job_id}, " if batch.array else ""
        self.view.say(self.run_id, f"slurm job {self.job_id} {'followed again' if self.earlier else 'submitted'} "
                                   f"({what}partition {gpu.partition}, {plan.settings.way})")
        follower = OutputFollower(self.task.output(), lambda line: self._timed(folder.feed(line)))
        try:
            await self.follow_until_end(follower)
        except BaseException:
            await asyncio.shield(self.emergency_cancel())
            raise
        facts = self.facts(follower)
        if self.state is None:  # it left the queue between two polls: what the view last showed is stale
            self.view.update(self.run_id, status=f"{facts['state'].lower()} ({facts['state_from']})")
        folder.write_facts(facts)
        code = self.exit_code(folder, facts)
        stored, store_ok = await folder.store(self.launch.store)
        if not store_ok:
            code = max(code, errors.LAUNCHER_TROUBLE)
        self.launch.live.pop(self.run_id, None)
        if self.cancel_confirmed is not False:
            state.remove()
        ok, total = folder.setup_counts()
        return RunOutcome(self.run_id, code, self.stopped_by or facts["state"].lower(), gpu=gpu.name,
                          region=gpu.partition, duration_s=time.monotonic() - started, setups_ok=ok,
                          setups_total=total, stored=stored, message="; ".join(self.notes), setups=folder.setup_rows())

    # --- while it runs -----------------------------------------------------------------------
    async def follow_until_end(self, follower: OutputFollower) -> None:
        interrupt = asyncio.create_task(self.launch.interrupted.wait())
        try:
            while True:
                follower.read()
                ended = await self.poll(self.pace.poll_s * 0.8)
                if ended:
                    break
                if interrupt.done():
                    self.stopped_by = "interrupt"
                    await self.cancel_and_confirm()
                    break
                await asyncio.wait({interrupt}, timeout=self.pace.poll_s)
            await self.drain(follower)
        finally:
            interrupt.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await interrupt

    def _timed(self, record) -> None:
        if (self.submitted_at is not None and isinstance(record, SetupResult) and record.status == "ok"
                and "submit_to_first_result_s" not in self.times):
            self.times["submit_to_first_result_s"] = round(time.monotonic() - self.submitted_at, 3)

    async def poll(self, max_age: float) -> bool:
        """The job's state from the call's one squeue answer; whether it ended (or left the queue)."""
        try:
            jobs = await self.queue.read(max_age)
        except commands.SlurmError as exc:
            self.view.update(self.run_id, status=f"slurm not answering: {exc}"[:80])
            return False
        state = jobs.get(self.job_id)
        self.state = state
        if state is None:  # the controller forgot it (MinJobAge), or it was a pending array task cancelled
            return True
        self.seen = state
        if self.submitted_at is not None and state.state == "RUNNING" and "submit_to_running_s" not in self.times:
            self.times["submit_to_running_s"] = round(time.monotonic() - self.submitted_at, 3)
        self.view.update(self.run_id, status=state.status, obtained=state.nodes if state.state != "PENDING" else "")
        return not state.live

    async def drain(self, follower: OutputFollower) -> None:
        """The rest of the output: the script writes its exit file after the run's last line, and a shared
        filesystem may show it late, so wait for it a while (not for a job Slurm killed: it writes none)."""
        deadline = time.monotonic() + self.pace.drain_timeout_s
        killed = self.state is not None and self.state.state in KILLED
        ran = (self.seen is not None and self.seen.ran) or self.task.output().exists()
        while ran and not killed and not self.task.exit_file.exists() and time.monotonic() < deadline:
            follower.read()
            await asyncio.sleep(min(0.5, self.pace.poll_s))
        follower.finish()

    # --- stopping ----------------------------------------------------------------------------
    async def cancel_and_confirm(self) -> None:
        """SIGINT to the job's steps (the run stores what it measured), then scancel for good; confirmed in squeue.
        A task still waiting is cancelled at once (an array's throttle would start it next)."""
        self.view.update(self.run_id, status="cancelling")
        deadline = time.monotonic() + self.pace.confirm_timeout_s
        hard = time.monotonic() + min(30.0, self.pace.confirm_timeout_s / 2)
        signalled = killed = False
        while time.monotonic() < deadline:
            try:
                if self.seen is None or self.seen.state == "PENDING" or time.monotonic() >= hard:
                    if not killed:
                        await commands.call(commands.cancel, self.job_id)
                        killed = True
                elif not signalled:
                    await commands.call(commands.cancel, self.job_id, "INT")
                    signalled = True
            except commands.SlurmError as exc:
                self.notes.append(f"scancel: {exc}")
            if await self.poll(min(1.0, self.pace.poll_s) / 2):
                self.cancel_confirmed = True
                ended = self.state.state.lower() if self.state else "left the queue"
                self.view.say(self.run_id, f"slurm job {self.job_id} {ended} (interrupted)")
                return
            await asyncio.sleep(min(1.0, self.pace.poll_s))
        self.cancel_confirmed = False
        self.notes.append(f"slurm job {self.job_id} not confirmed stopped: scancel {self.job_id}")

    async def emergency_cancel(self) -> None:
        if self.job_id is None or (self.state is not None and not self.state.live):
            return
        with contextlib.suppress(BaseException):  # best effort on the way out
            await asyncio.wait_for(commands.call(commands.cancel, self.job_id), timeout=30)

    # --- the end -------------------------------------------------------------------------------
    def facts(self, follower: OutputFollower) -> dict[str, Any]:
        # Slurm's output file beside the results, uploaded with them (not while the job may still write it)
        kept = self.task.keep_output() if self.cancel_confirmed is not False else None
        facts = job_facts(self.task, self.launch.plan, self.run, self.state, self.seen)
        facts.update(output=str(kept) if kept else None, output_bytes=follower.offset, stopped_by=self.stopped_by
                     or facts["stopped_by"], cancel_confirmed=self.cancel_confirmed, timings=self.times)
        return facts

    def exit_code(self, folder: RunFolder, facts: dict[str, Any]) -> int:
        if self.stopped_by == "interrupt":
            return errors.INTERRUPTED
        if self.cancel_confirmed is False:
            return errors.LAUNCHER_TROUBLE
        if facts["status"] != "succeeded":
            why = facts["error"]
            if facts["stopped_by"] != "time limit":
                own = folder.error_line(skip=slurm_noise)  # the failed setups' own errors first, whole
                why = f"{why}: {own}" if own else why
            facts["error"] = why
            if facts["stopped_by"] == "time limit":
                self.stopped_by = "time limit"
            self.notes.append(f"job {facts['state'].lower()}: {why}")
            folder.write_facts(facts)
            return errors.JOB_NOT_SUCCEEDED
        return folder.records_code()


def job_facts(task: BatchTask, plan, run: RunPlan, state: commands.SlurmJob | None,
              seen: commands.SlurmJob | None) -> dict[str, Any]:
    """job.json of a task that ended: its state from squeue while the controller lists it, else from the exit file
    its script wrote (the exit code, when it started and ended, whether the time limit stopped it), else from the
    fact that it left the queue without one (never started: cancelled while pending; or killed)."""
    end = task.ended()
    ran = (seen is not None and seen.ran) or end is not None or task.output().exists()
    if state is not None:
        name, source = state.state, "squeue"
    elif end is not None:
        name, source = ("COMPLETED" if end.exit_code == 0 else "FAILED"), "exit file (no longer in squeue)"
    elif ran:
        name, source = "ENDED", "neither squeue nor an exit file: killed before its script could write one"
    else:
        name, source = "CANCELLED", "left the queue before it started"
    exit_code = end.exit_code if end is not None else (commands.exit_code(task.job_id) if state else None)
    time_limit = end is not None and end.time_limit
    count = run.candidates[0].count
    gpu = plan.settings.gpu(run.candidates[0].requested)
    minutes = task.batch.time_minutes or plan.max_runtime_minutes
    seconds = _seconds(state.elapsed) if state is not None else (end.seconds if end is not None else None)
    if seconds is None and seen is not None:
        seconds = _seconds(seen.elapsed)  # at least what it had run when last seen
    started_at = _iso(end.started_at) if end is not None and end.started_at else None
    started_at = started_at or (_iso(seen.start) if seen is not None and seen.ran else None)
    if name == ENDED_OK and exit_code == 0:
        status, error = "succeeded", None
    elif time_limit:
        status = "failed"
        error = (f"Slurm interrupted the run {SIGINT_BEFORE_LIMIT_S} s before its --time of {minutes} minutes"
                 " (what it measured is kept)")
    elif name == "TIMEOUT":
        status, error = "failed", f"Slurm ended it at its --time of {minutes} minutes"
    elif name == "CANCELLED":
        status = "failed"
        error = "cancelled (scancel)" if ran else "cancelled before it started (scancel)"
    else:
        status = "failed"
        error = f"exit code {exit_code}" if exit_code is not None else f"{name.lower()} ({source})"
    batch = task.batch
    return {
        "provider": plan.provider,
        "via": "slurm",
        "run_id": task.run_id,
        "job_id": task.job_id,
        "array_job_id": batch.job_id if batch.array else None,
        "array_task": task.index if batch.array else None,
        "job_name": batch.name,
        "state": name,
        "state_from": source,
        "reason": state.reason if state else None,
        "status": status,
        "exit_code": exit_code,
        "error": error,
        "stopped_by": "time limit" if time_limit else None,
        "partition": gpu.partition,
        "gpu_request": gpu.request(count),
        "gpu_count": count,
        "nodes": (state or seen).nodes if (state or seen) else None,
        "elapsed_s": seconds,
        "time_limit_minutes": minutes,
        "gpu_hours": round((seconds or 0.0) / 3600 * count, 6),
        "started_at": started_at if ran else None,
        "ended_at": _iso(end.ended_at) if end is not None and end.ended_at else None,
        "way": plan.settings.way,
        "script": str(batch.script_path),
        "cost_usd": 0.0,
    }


def settle(task: BatchTask, plan, run: RunPlan, state: commands.SlurmJob | None, store, redact) -> dict[str, Any]:
    """A task an earlier call submitted that ended while no launcher followed it: its job.json, from squeue or its
    exit file (with the failed setups' own errors from its output), its output file moved beside the results, and
    the run folder uploaded with --store. Nothing is streamed: its records are the job's own, already stored."""
    import json
    from collections import deque

    from gpubench.run.ingest import RecordStream
    from gpubench.stores import deliver

    from ..progress import _Discard
    from ..results import JOB_FILE, MirrorDir, failure_reason

    kept = task.keep_output()
    facts = job_facts(task, plan, run, state, state)
    facts.update(output=str(kept) if kept else None, settled_by_a_later_call=True)
    if facts["status"] != "succeeded" and facts["stopped_by"] != "time limit" and kept is not None:
        stream, text = RecordStream(MirrorDir(task.run_folder, _Discard())), deque(maxlen=50)
        for line in kept.read_text(errors="replace").splitlines():
            if stream.feed(redact(line)) is None and line.strip():
                text.append(line.strip())
        own = failure_reason(stream.results, text, slurm_noise)
        facts["error"] = f"{facts['error']}: {own}" if own else facts["error"]
    task.run_folder.mkdir(parents=True, exist_ok=True)
    (task.run_folder / JOB_FILE).write_text(redact(json.dumps(facts, indent=2, sort_keys=True, default=str)) + "\n")
    if store is not None:
        deliver(task.run_folder, store)
    return facts


def _iso(when: str) -> str | None:
    """squeue's %S (local time, no zone) or the exit file's UTC time, as an ISO time in UTC."""
    try:
        return datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone(UTC).isoformat(timespec="seconds")
    except ValueError:
        return None


def _seconds(elapsed: str) -> float:
    """squeue's %M (elapsed): [D-][HH:]MM:SS."""
    days, _, rest = elapsed.rpartition("-") if "-" in elapsed else ("", "", elapsed)
    try:
        parts = [int(p) for p in rest.split(":")]
    except ValueError:
        return 0.0
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    return seconds + int(days or 0) * 86400


__all__ = ["OutputFollower", "SlurmRun", "TaskEnd", "job_facts", "settle"]
