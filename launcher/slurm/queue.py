"""What the runs of one launcher call share on a Slurm cluster (the Slurm provider holds the queue): one squeue call
per poll for all their jobs (by name: the controller's load stays flat however many cells a sweep has), and one
sbatch per batch however many of its tasks ask for it (Slurm.submit_together sends a sweep's arrays before the runs
start; a run's job of its own is sent by its runner)."""

from __future__ import annotations

import asyncio
import time

from . import commands
from .batch import Batch


class SlurmQueue:
    """squeue's answer for every job of one launcher call, read at most once per `max_age` seconds."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.jobs: dict[str, commands.SlurmJob] = {}
        self.asked_at = float("-inf")  # when the answer held was asked for (monotonic)
        self.stale_before = float("-inf")  # a job was submitted: an answer asked for before then does not hold it
        self.calls = 0
        self._lock: asyncio.Lock | None = None

    def watch(self, name: str) -> None:
        """Ask for this job name too (an answer asked for before does not hold its jobs)."""
        if name not in self.names:
            self.names.add(name)
            self.stale_before = time.monotonic()

    def submitted(self) -> None:
        self.stale_before = time.monotonic()

    async def read(self, max_age: float) -> dict[str, commands.SlurmJob]:
        """Every watched job (each array task on its own) by job id; a job not in it has left the queue."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = time.monotonic()
            if now - self.asked_at > max_age or self.asked_at < self.stale_before:
                jobs = await commands.call(commands.queue, sorted(self.names))
                self.jobs, self.asked_at = jobs, now
                self.calls += 1
            return self.jobs


async def submit(batch: Batch, chdir: str, queue: SlurmQueue) -> str:
    """The batch's one sbatch, however many of its tasks ask: its job id. sbatch's refusal is SlurmError for every
    task that asks, and leaves nothing behind."""
    if batch.submitting is None:
        batch.submitting = asyncio.Lock()
    async with batch.submitting:
        if batch.job_id is not None:
            return batch.job_id
        if batch.refused is not None:
            raise commands.SlurmError(batch.refused)
        batch.write()
        try:
            job_id = await commands.call(commands.submit, str(batch.script_path), chdir)
        except commands.SlurmError as exc:
            batch.refused = str(exc)
            batch.discard()
            raise
        batch.submitted(job_id, time.monotonic())
        queue.submitted()
        return job_id
