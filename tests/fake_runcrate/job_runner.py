"""One job's life on a real clock: queued, placed on a machine, its command run (in its image on the local
Docker engine when the engine has that image, else with bash), ended."""

from __future__ import annotations

import io
import secrets
import tarfile
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from .artifacts import collect_artifacts
from .catalogue import placement
from .docker_job import LABEL, ContainerProcess, start_in_image
from .job_spec import GpuChoice
from .job_state import Attempt, Job, Signal
from .process import BashProcess, command_environment
from .wire import utc_now

if TYPE_CHECKING:
    from .jobs import JobBoard

_OK, _SIGNALLED, _TIMED_OUT = "ok", "signalled", "timed_out"


class JobRunner:
    """Drives one job in its own thread; ``Job.signal`` + ``Job.wake`` steer it from outside."""

    def __init__(self, board: JobBoard, job: Job) -> None:
        self._board = board
        self._job = job
        self._settings = board.settings
        self.thread = threading.Thread(target=self._run, name=f"fake-runcrate-{job.id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            while self._one_attempt():
                pass
        except Exception:
            traceback.print_exc()
            with self._board.lock:
                if self._job.live:
                    self._finish("failed", error="the fake Runcrate failed running this job")
        finally:
            self._job.logs.end()
            self._job.ended.set()
            self._board.job_ended(self._job)

    def _one_attempt(self) -> bool:
        """Runs the current attempt to its end; True when the job goes round again (a retry)."""
        job, attempt = self._job, self._job.attempt
        with self._board.lock:
            job.add_event("queued", attempt=attempt.number)
        if self._wait_until(lambda: False, self._settings.queue_s) == _SIGNALLED:
            return self._interrupted(attempt)
        if self._wait_until(self._group_has_room, None) == _SIGNALLED:
            return self._interrupted(attempt)
        choice = self._wait_for_capacity()
        if choice is None:
            if job.signal is not None:
                return self._interrupted(attempt)
            return self._no_capacity(attempt)
        self._machine_up(attempt, choice)
        if self._wait_until(lambda: False, self._settings.start_s) == _SIGNALLED:
            return self._interrupted(attempt)
        process = self._launch(attempt)
        try:
            outcome = self._wait_until(
                lambda: process.exit_code is not None, self._settings.runtime_minutes(job.spec.max_runtime_minutes)
            )
        finally:  # whatever happens, the machine goes: no process or container outlives its job
            exit_code = _shell_exit_code(process.finish())
        if outcome == _SIGNALLED:
            return self._interrupted(attempt)
        if outcome == _TIMED_OUT:
            self._end_attempt(attempt, "timed_out", error="max_runtime_minutes reached")
            return self._finish("timed_out", error="max_runtime_minutes reached")
        if exit_code == 0:
            self._end_attempt(attempt, "succeeded", exit_code=0)
            return self._finish("succeeded", exit_code=0)
        self._end_attempt(attempt, "failed", exit_code=exit_code)
        if self._retries_nonzero_exit(exit_code):
            return self._retry(attempt, f"exit code {exit_code}")
        return self._finish("failed", exit_code=exit_code)

    # ── waiting ────────────────────────────────────────────────────────────────

    def _wait_until(self, ready: Callable[[], bool], timeout_s: float | None) -> str:
        """Hold until ``ready()``, a signal, or ``timeout_s`` real seconds (None: no limit)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self._job.wake.clear()
            if self._job.signal is not None:
                return _SIGNALLED
            if ready():
                return _OK
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return _TIMED_OUT
            self._job.wake.wait(left)

    def _group_has_room(self) -> bool:
        has_room = self._board.group_has_room(self._job)
        with self._board.lock:
            self._job.queue_reason = None if has_room else "max_parallel"
        return has_room

    def _wait_for_capacity(self) -> GpuChoice | None:
        """The first candidate that has capacity, waiting up to capacity_wait_minutes for one."""
        job = self._job
        deadline = time.monotonic() + self._settings.minutes(job.spec.capacity_wait_minutes)
        poll_s = self._settings.minutes(self._settings.capacity_poll_minutes)
        while True:
            choice = self._board.first_available(job.spec)
            if choice is not None:
                return choice
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with self._board.lock:
                job.queue_reason = "no_capacity"
                job.next_attempt_at = utc_now() + timedelta(seconds=min(poll_s, left))
            if self._wait_until(lambda: False, min(poll_s, left)) == _SIGNALLED:
                return None

    # ── the machine and the command ───────────────────────────────────────────

    def _machine_up(self, attempt: Attempt, choice: GpuChoice) -> None:
        job = self._job
        region, rate, gpu_memory_gb = placement(
            self._board.instance_types, choice.gpu_type, choice.gpu_count, job.spec.region
        ) or (None, 0.0, 0)
        with self._board.lock:
            attempt.gpu = choice
            attempt.region = region
            attempt.cost_per_hour = rate
            attempt.gpu_memory_gb = gpu_memory_gb
            attempt.deployment_id = f"dep_{secrets.token_hex(6)}"
            attempt.machine_up = time.monotonic()
            attempt.started_at = utc_now()
            attempt.status = "starting"
            job.status = "starting"
            job.queue_reason = None
            job.next_attempt_at = None
            job.instance_id = f"inst_{secrets.token_hex(6)}"
            job.add_event("launch_attempt", f"{choice.gpu_type} x{choice.gpu_count} in {region}", attempt.number)
            job.add_event("machine_up", job.instance_id, None)

    def _launch(self, attempt: Attempt) -> BashProcess | ContainerProcess:
        job = self._job
        workspace = self._board.workspace_for(job, attempt.number)
        outputs = workspace / "outputs"
        outputs.mkdir(parents=True, exist_ok=True)
        cwd = self._unpack_code(workspace)
        job_env = {**job.spec.env, "RUNCRATE_JOB_ATTEMPT": str(attempt.number)}
        labels = {LABEL: str(self._settings.workspace_root), f"{LABEL}.job": job.id}
        image = job.spec.image if self._settings.run_images else None
        process = start_in_image(image, job.spec.command, workspace, cwd, job_env, job.logs.append, labels)
        if process is None:  # not asked, no engine, or it lacks the image: the command runs with bash here
            env = command_environment({**job_env, "RUNCRATE_OUTPUT_DIR": str(outputs)}, machine_id=job.instance_id)
            process = BashProcess(job.spec.command, cwd, env, job.logs.append, machine_id=job.instance_id)
        threading.Thread(target=self._wake_on_exit, args=(process,), daemon=True).start()
        with self._board.lock:
            attempt.workspace = workspace
            attempt.command_started = time.monotonic()
            attempt.status = "running"
            job.status = "running"
            job.started_at = job.started_at or utc_now()
            job.add_event("started", None, attempt.number)
        return process

    def _unpack_code(self, workspace: Path) -> Path:
        """Where the command runs: ``code/`` when the job has code, else the workspace itself."""
        spec = self._job.spec
        if spec.code is None:
            return workspace
        code_dir = workspace / "code"
        code_dir.mkdir(exist_ok=True)
        upload = self._board.uploads.get(spec.code_upload_id) if spec.code_upload_id else None
        if upload is not None and upload.data is not None:
            with tarfile.open(fileobj=io.BytesIO(upload.data), mode="r:*") as archive:
                archive.extractall(code_dir, filter="data")
        return code_dir

    def _wake_on_exit(self, process: BashProcess | ContainerProcess) -> None:
        process.wait()
        self._job.wake.set()

    # ── endings ───────────────────────────────────────────────────────────────

    def _end_attempt(
        self, attempt: Attempt, status: str, *, exit_code: int | None = None, error: str | None = None
    ) -> None:
        artifacts = collect_artifacts(attempt.workspace / "outputs") if attempt.workspace else {}
        with self._board.lock:
            if attempt.machine_up is not None and attempt.machine_down is None:
                attempt.machine_down = time.monotonic()
                self._job.add_event("machine_stopped", self._job.instance_id, None)
            attempt.ended_at = utc_now()
            attempt.status = status
            attempt.exit_code = exit_code
            attempt.error = error
            self._job.artifacts = artifacts
            if attempt.command_started is not None:
                detail = f"exit code {exit_code}" if exit_code is not None else error
                self._job.add_event("exited", detail, attempt.number)

    def _interrupted(self, attempt: Attempt) -> bool:
        """Acts on the signal that stopped the attempt."""
        signal = self._job.signal
        if signal is Signal.MACHINE_FAILURE:
            self._end_attempt(attempt, "failed", error="machine failure")
            if attempt.number <= self._job.spec.max_retries:
                return self._retry(attempt, "machine failure")
            return self._finish("failed", error="machine failure (no retries left)")
        reason = "fake Runcrate stopped" if signal is Signal.SHUTDOWN else None
        self._end_attempt(attempt, "cancelled", error=reason)
        return self._finish("cancelled", error=reason)

    def _no_capacity(self, attempt: Attempt) -> bool:
        names = ", ".join(f"{c.gpu_type}:{c.gpu_count}" for c in self._job.spec.candidates)
        error = f"no capacity for {names} within capacity_wait_minutes"
        self._end_attempt(attempt, "failed", error=error)
        return self._finish("failed", error=error)

    def _retries_nonzero_exit(self, exit_code: int) -> bool:
        spec = self._job.spec
        return (
            "nonzero_exit" in spec.retry_on
            and (not spec.retry_exit_codes or exit_code in spec.retry_exit_codes)
            and self._job.attempt.number <= spec.max_retries
        )

    def _retry(self, attempt: Attempt, why: str) -> bool:
        job = self._job
        with self._board.lock:
            job.signal = None
            job.attempts.append(Attempt(attempt.number + 1, attempt.gpu))
            job.status = "queued"
            job.exit_code = None
            job.error = None
            job.instance_id = None
            job.add_event("retry", why, attempt.number + 1)
        return True

    def _finish(self, status: str, *, exit_code: int | None = None, error: str | None = None) -> bool:
        job = self._job
        with self._board.lock:
            job.status = status
            job.exit_code = exit_code
            job.error = error
            job.queue_reason = None
            job.next_attempt_at = None
            job.ended_at = utc_now()
            job.add_event(status, error, job.attempt.number)
        return False


def _shell_exit_code(returncode: int) -> int:
    """A killed command reads as 128 + signal, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode
