"""The Slurm path: one run as one batch job. Submit it (or follow one an earlier call submitted), read its output
file as it grows through the same record stream the Runcrate path reads, show Slurm's state (pending with its
reason, running, ended), and at the end add the job's facts (job.json) to the run folder the job wrote itself.

A job this call submitted is never left running by this call: Ctrl-C and any error cancel it, first with SIGINT to
its steps (`gpubench run` records `interrupted` and stores what it measured), then for good if it does not end.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import time
from pathlib import Path
from typing import Any

from gpubench.run.ingest import LineAssembler
from gpubench.schema import SetupResult

from .. import errors
from ..context import Launch
from ..plan import RunPlan
from ..results import RunFolder, RunOutcome
from . import commands
from .plan import BatchJob, batch_for

ENDED_OK = "COMPLETED"


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
    def __init__(self, launch: Launch, run: RunPlan, adopt: commands.SlurmJob | None = None):
        self.launch = launch
        self.run = run
        self.adopt = adopt  # a job an earlier call submitted (found by its comment): followed, not submitted again
        self.view = launch.view
        self.pace = launch.pace
        self.run_id = run.run_id
        self.job_id: str | None = None
        self.state: commands.SlurmJob | None = None
        self.stopped_by: str | None = None
        self.cancel_confirmed: bool | None = None
        self.submitted_at: float | None = None  # monotonic, when this call submitted it (None when followed again)
        self.times: dict[str, float] = {}  # submit -> running -> first ok result (first-matmul's whole question)
        self.notes: list[str] = []

    @property
    def batch(self) -> BatchJob:
        return batch_for(self.launch.plan, self.run, self.launch.store)

    async def execute(self) -> RunOutcome:
        plan = self.launch.plan
        started = time.monotonic()
        batch = self.batch
        folder = RunFolder(plan.results_dir, self.run_id, {}, self.view, self.launch.redact, mirror=True)
        if self.adopt is not None:
            self.job_id = self.adopt.job_id
        else:
            if self.launch.interrupted.is_set():
                return RunOutcome(self.run_id, errors.INTERRUPTED, "not launched", launched=False,
                                  message="interrupted before the job was submitted")
            batch.side.mkdir(parents=True, exist_ok=True)
            batch.script_path.write_text(batch.script())
            self.view.update(self.run_id, status="submitting")
            try:
                self.job_id = await commands.call(commands.submit, str(batch.script_path), plan.results_dir)
            except commands.SlurmError as exc:
                self.view.update(self.run_id, status="refused")
                return RunOutcome(self.run_id, errors.BAD_INPUT, "refused", message=str(exc), launched=False)
            self.submitted_at = time.monotonic()
        (batch.side / "job_id").write_text(self.job_id + "\n")
        self.launch.live[self.run_id] = f"slurm job {self.job_id}"
        gpu = plan.slurm.gpu(self.run.candidates[0].requested)
        self.view.say(self.run_id, f"slurm job {self.job_id} {'followed again' if self.adopt else 'submitted'} "
                                   f"(partition {gpu.partition}, {plan.slurm.way})")
        follower = OutputFollower(batch.output(self.job_id), lambda line: self._timed(folder.feed(line)))
        try:
            await self.follow_until_end(follower, batch)
        except BaseException:
            await asyncio.shield(self.emergency_cancel())
            raise
        facts = self.facts(batch, follower)
        folder.write_facts(facts)
        code = self.exit_code(folder, facts)
        stored, store_ok = await folder.store(self.launch.store)
        if not store_ok:
            code = max(code, errors.LAUNCHER_TROUBLE)
        self.launch.live.pop(self.run_id, None)
        ok, total = folder.setup_counts()
        return RunOutcome(self.run_id, code, self.stopped_by or facts["state"].lower(), gpu=gpu.name,
                          region=gpu.partition, duration_s=time.monotonic() - started, setups_ok=ok,
                          setups_total=total, stored=stored, message="; ".join(self.notes), setups=folder.setup_rows())

    # --- while it runs -----------------------------------------------------------------------
    async def follow_until_end(self, follower: OutputFollower, batch: BatchJob) -> None:
        interrupt = asyncio.create_task(self.launch.interrupted.wait())
        try:
            while True:
                follower.read()
                ended = await self.poll(batch)
                if ended:
                    break
                if interrupt.done():
                    self.stopped_by = "interrupt"
                    await self.cancel_and_confirm(batch)
                    break
                await asyncio.wait({interrupt}, timeout=self.pace.poll_s)
            await self.drain(follower, batch)
        finally:
            interrupt.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await interrupt

    def _timed(self, record) -> None:
        if (self.submitted_at is not None and isinstance(record, SetupResult) and record.status == "ok"
                and "submit_to_first_result_s" not in self.times):
            self.times["submit_to_first_result_s"] = round(time.monotonic() - self.submitted_at, 3)

    async def poll(self, batch: BatchJob) -> bool:
        """Read the job's state from the controller; whether it ended."""
        try:
            state = await commands.call(commands.job, self.job_id)
        except commands.SlurmError as exc:
            self.view.update(self.run_id, status=f"slurm not answering: {exc}"[:80])
            return False
        if state is None:  # the controller forgot it (ended over MinJobAge ago): the job's exit file says
            return batch.exit_file(self.job_id).exists()
        self.state = state
        if self.submitted_at is not None and state.state == "RUNNING" and "submit_to_running_s" not in self.times:
            self.times["submit_to_running_s"] = round(time.monotonic() - self.submitted_at, 3)
        self.view.update(self.run_id, status=state.status, obtained=state.nodes if state.state != "PENDING" else "")
        return not state.live

    async def drain(self, follower: OutputFollower, batch: BatchJob) -> None:
        """The rest of the output: the job writes its exit file after its last line; a shared filesystem may show
        it late, so wait for it a while."""
        deadline = time.monotonic() + self.pace.drain_timeout_s
        ran = self.state is None or self.state.nodes not in ("", "(null)")
        while ran and not batch.exit_file(self.job_id).exists() and time.monotonic() < deadline:
            follower.read()
            await asyncio.sleep(min(0.5, self.pace.poll_s))
        follower.finish()

    # --- stopping ----------------------------------------------------------------------------
    async def cancel_and_confirm(self, batch: BatchJob) -> None:
        """SIGINT to the job's steps (the run stores what it measured), then scancel for good; confirmed in squeue."""
        self.view.update(self.run_id, status="cancelling")
        deadline = time.monotonic() + self.pace.confirm_timeout_s
        hard = time.monotonic() + min(30.0, self.pace.confirm_timeout_s / 2)
        signalled = killed = False
        while time.monotonic() < deadline:
            try:
                if self.state is None or self.state.state == "PENDING" or time.monotonic() >= hard:
                    if not killed:
                        await commands.call(commands.cancel, self.job_id)
                        killed = True
                elif not signalled:
                    await commands.call(commands.cancel, self.job_id, "INT")
                    signalled = True
            except commands.SlurmError as exc:
                self.notes.append(f"scancel: {exc}")
            if await self.poll(batch):
                self.cancel_confirmed = True
                ended = self.state.state.lower() if self.state else "ended"
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
    def facts(self, batch: BatchJob, follower: OutputFollower) -> dict[str, Any]:
        exit_file = batch.exit_file(self.job_id)
        exit_code = None
        with contextlib.suppress(OSError, ValueError):
            exit_code = int(exit_file.read_text().strip())
        if exit_code is None:
            exit_code = commands.exit_code(self.job_id)
        state = self.state
        plan = self.launch.plan
        gpu = plan.slurm.gpu(self.run.candidates[0].requested)
        return {
            "via": "slurm",
            "run_id": self.run_id,
            "job_id": self.job_id,
            "state": state.state if state else ("COMPLETED" if exit_code == 0 else "ENDED"),
            "reason": state.reason if state else None,
            "status": "succeeded" if (state.state if state else "COMPLETED") == ENDED_OK and exit_code == 0
            else "failed",
            "exit_code": exit_code,
            "error": None,
            "partition": gpu.partition,
            "gpu_request": gpu.request(self.run.candidates[0].count),
            "gpu_count": self.run.candidates[0].count,
            "nodes": state.nodes if state else None,
            "elapsed": state.elapsed if state else None,
            "time_limit_minutes": plan.max_runtime_minutes,
            "gpu_hours": round(_seconds(state.elapsed if state else "") / 3600 * self.run.candidates[0].count, 6),
            "started_at": None if state is None or state.nodes in ("", "(null)") else "ran",
            "way": plan.slurm.way,
            "script": str(batch.script_path),
            "output": str(batch.output(self.job_id)),
            "output_bytes": follower.offset,
            "stopped_by": self.stopped_by,
            "cancel_confirmed": self.cancel_confirmed,
            "cost_usd": 0.0,
            "timings": self.times,  # seen by this call, at its polling interval (none for a job followed again)
        }

    def exit_code(self, folder: RunFolder, facts: dict[str, Any]) -> int:
        if self.stopped_by == "interrupt":
            return errors.INTERRUPTED
        if self.cancel_confirmed is False:
            return errors.LAUNCHER_TROUBLE
        if facts["status"] != "succeeded":
            why = folder.error_line()
            facts["error"] = why
            state = facts["state"].lower()
            detail = f"exit code {facts['exit_code']}" if facts["exit_code"] is not None else state
            if facts["state"] == "TIMEOUT":
                detail = f"its --time of {facts['time_limit_minutes']} min ran out"
            self.notes.append(f"job {state}: {detail}" + (f": {why}" if why else ""))
            folder.write_facts(facts)
            return errors.JOB_NOT_SUCCEEDED
        return folder.records_code()


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
