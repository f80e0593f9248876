"""The jobs path: submit the workload's image as a Runcrate job, stream its output, enforce the
user's limits, and at the end store the results with the job's facts. A job the launcher started
is never left running by the launcher: every way out (end, limit, Ctrl-C, a bug) cancels it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from pathlib import Path
from typing import Any

from .. import errors
from ..context import Launch
from ..plan import RunPlan
from ..results import RunFolder, RunOutcome
from ..state import LaunchState, launcher_tag
from .client import api_errors, describe
from .follow import ErrorClock, LogFollower, LostContact

STOP_REASONS = {
    "max-cost": "--max-cost reached",
    "max-minutes": "--max-minutes reached",
    "max-usd": "the sweep's max_usd reached",
    "interrupt": "interrupted",
}


class Refused(Exception):
    """The API refused the submit: nothing was started."""


class Unconfirmed(Exception):
    """The submit's answer never came: a job may or may not exist."""


def job_region(job) -> str | None:
    region = (job.model_extra or {}).get("region") if job is not None else None
    if region is None and job is not None and job.attempts:
        region = job.attempts[-1].region
    return region


class JobRun:
    def __init__(self, launch: Launch, run: RunPlan, client, adopt=None):
        self.launch = launch
        self.adopt = adopt  # a job this run already submitted (a resumed sweep): followed, not submitted again
        self.run = run
        self.client = client
        self.pace = launch.pace
        self.view = launch.view
        self.run_id = run.run_id
        self.job = None
        self.job_seen_at = 0.0
        self.stopped_by: str | None = None
        self.lost: str | None = None
        self.stream_lost: str | None = None  # the log stream failed for good (the job may still be fine)
        self.cancel_confirmed: bool | None = None
        self.follower: LogFollower | None = None
        self.notes: list[str] = []

    # --- the whole run -----------------------------------------------------------------------
    async def execute(self) -> RunOutcome:
        plan = self.launch.plan
        started = time.monotonic()
        if self.adopt is not None:  # a killed launcher's partial folder: the job's log is read again from its start
            shutil.rmtree(Path(plan.results_dir) / self.run_id, ignore_errors=True)
        folder = RunFolder(plan.results_dir, self.run_id, plan.config(self.run), self.view, self.launch.redact)
        state = LaunchState(self.run_id)
        state.save(provider=plan.provider, kind="job", workload=plan.workload.name, job_id=None)
        try:
            job = self.adopt if self.adopt is not None else await self.submit()
        except Refused as exc:
            folder.discard()
            state.remove()
            self.view.update(self.run_id, status="refused")
            return RunOutcome(self.run_id, errors.BAD_INPUT, "refused", message=str(exc), launched=False)
        except Unconfirmed as exc:
            folder.write_facts({"run_id": self.run_id, "via": "job", "submitted": "unconfirmed", "error": str(exc)})
            stored, _ = await folder.store(None)
            return RunOutcome(self.run_id, errors.LAUNCHER_TROUBLE, "unknown", stored=stored, message=(
                f"the submit's answer was lost ({exc}); a job may exist: check with "
                f"gpubench-launch status {self.run_id}, stop it with gpubench-launch cleanup"))
        if job is None:
            folder.discard()
            state.remove()
            return RunOutcome(self.run_id, errors.INTERRUPTED, "not launched", launched=False,
                              message="interrupted before the job was submitted")
        state.save(job_id=job.id)
        self.launch.live[self.run_id] = f"job {job.id}"
        self._seen(job)
        self.view.say(self.run_id, f"job {job.id} {'followed again' if self.adopt else 'submitted'} "
                                   f"({self.run.label}, image {plan.image})")
        try:
            await self.follow_until_end(folder)
        except BaseException:
            await asyncio.shield(self.emergency_cancel())
            folder.close()
            raise
        facts = await self.collect_facts()
        if self.stream_incomplete(folder):
            facts.update(await self.recover(folder))
        # The rate of the instance obtained, against the one the job's cost metrics used (the cheapest region's).
        facts["pricing"] = self.launch.plan.pricing(self.run, self._obtained(self.job), job_region(self.job),
                                                    getattr(self.job, "cost_per_hour", None))
        folder.write_facts(facts)
        code = self.exit_code(folder)
        stored, store_ok = await folder.store(self.launch.store)
        if not store_ok:
            code = max(code, errors.LAUNCHER_TROUBLE)
        if self.job is not None and self.job.finished:
            state.remove()
            self.launch.live.pop(self.run_id, None)
        ok, total = folder.setup_counts()
        job = self.job
        return RunOutcome(
            self.run_id, code, self.stopped_by or (job.status if job else "unknown"),
            gpu=self._obtained(job), region=job_region(job), cost_usd=job.cost_usd if job else None,
            duration_s=time.monotonic() - started, setups_ok=ok, setups_total=total, stored=stored,
            message="; ".join(self.notes), setups=folder.setup_rows(),
        )

    # --- submit ----------------------------------------------------------------------------------
    async def submit(self):
        """The submitted job; None if interrupted first. The idempotency key is the run id, so a
        submit repeated after a lost answer finds the same job instead of starting a second."""
        if self.launch.interrupted.is_set():
            return None
        from runcrate import ApiError

        spec = self.launch.plan.job_spec(self.run, launcher_tag())
        self.view.update(self.run_id, status="submitting")
        for attempt in range(4):
            try:
                return await self.client.jobs.run(idempotency_key=f"gpubench-{self.run_id}", **spec)
            except ApiError as exc:
                raise Refused(describe(exc, self.launch.redact)) from None
            except api_errors() as exc:  # no answer even after the SDK's retries
                if attempt == 3:
                    raise Unconfirmed(describe(exc, self.launch.redact)) from None
                await asyncio.sleep(self.pace.poll_s)
        raise AssertionError("unreachable")

    # --- while it runs -----------------------------------------------------------------------
    async def follow_until_end(self, folder: RunFolder) -> None:
        self.follower = LogFollower(
            self.client, self.job.id, folder.feed, self.pace, self.launch.redact, on_page=self._on_page,
        )
        follow = asyncio.create_task(self.follower.run(), name=f"follow-{self.run_id}")
        watch = asyncio.create_task(self.watch(), name=f"watch-{self.run_id}")
        interrupt = asyncio.create_task(self.launch.interrupted.wait(), name=f"interrupt-{self.run_id}")
        try:
            done, _ = await asyncio.wait({follow, watch, interrupt}, return_when=asyncio.FIRST_COMPLETED)
            if follow in done:
                if follow.exception() is not None and not isinstance(follow.exception(), LostContact):
                    raise follow.exception()
                if follow.exception() is None:
                    return
                # The log stream is lost, not the job: keep watching it; its artifacts will hold the records.
                self.stream_lost = str(follow.exception())
                self.view.say(self.run_id, f"log stream lost ({self.stream_lost}): the records will come from "
                                           "the job's artifacts once it ends")
                done, _ = await asyncio.wait({watch, interrupt}, return_when=asyncio.FIRST_COMPLETED)
            if watch in done and watch.exception() is not None:
                if not isinstance(watch.exception(), LostContact):
                    raise watch.exception()
                self.lost = str(watch.exception())
                return
            reason = "interrupt" if interrupt in done else watch.result()
            if reason is not None:
                self.stopped_by = reason
                await self.cancel_and_confirm(STOP_REASONS[reason])
            # The job ended (or was stopped): read the rest of its output.
            if self.stream_lost is None:
                try:
                    await asyncio.wait_for(asyncio.shield(follow), timeout=self.pace.drain_timeout_s)
                except (TimeoutError, LostContact):
                    self.notes.append("the end of the output could not be read")
        finally:
            for task in (follow, watch, interrupt):
                task.cancel()
            await asyncio.gather(follow, watch, interrupt, return_exceptions=True)
            if not self.follower.done:  # keep what arrived, even a last line without its newline
                self.follower.assembler.flush()

    async def watch(self) -> str | None:
        """Status reads, spaced; returns a stop reason when a limit is reached, None when the job ended."""
        plan = self.launch.plan
        deadline = None if plan.max_minutes is None else time.monotonic() + plan.max_minutes * 60
        clock = ErrorClock(self.pace)
        while True:
            wait = self.pace.status_gap_s
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
            if plan.max_cost is not None:
                wait = min(wait, max(self.seconds_to_cost_limit(), self.pace.poll_s))
            if wait > 0:
                await asyncio.sleep(wait)
            if deadline is not None and time.monotonic() >= deadline:
                self.view.say(self.run_id, f"--max-minutes {plan.max_minutes:g} reached: cancelling the job")
                return "max-minutes"
            try:
                job = await self.client.jobs.get(self.job.id)
            except api_errors() as exc:
                await clock.failed(exc, self.launch.redact)
                continue
            clock.ok()
            self._seen(job)
            if job.finished:
                return None
            if plan.max_cost is not None and (job.cost_usd or 0.0) >= plan.max_cost:
                self.view.say(self.run_id, f"--max-cost ${plan.max_cost:g} reached (${job.cost_usd:.4f} so far): "
                                           "cancelling the job")
                return "max-cost"
            cap = self.launch.cap
            if cap is not None and cap.reached(self.run_id, job.cost_usd):
                self.view.say(self.run_id, f"the sweep's cap ${cap.limit_usd:.4g} reached: cancelling the job")
                return "max-usd"

    def seconds_to_cost_limit(self) -> float:
        """When the cost will reach --max-cost at the job's hourly rate (inf if it is not billing)."""
        job = self.job
        if job is None or job.status not in ("starting", "running") or not job.cost_per_hour:
            return float("inf")
        spent = (job.cost_usd or 0.0) + job.cost_per_hour * (time.monotonic() - self.job_seen_at) / 3600
        return max(0.0, (self.launch.plan.max_cost - spent) * 3600 / job.cost_per_hour)

    def _seen(self, job) -> None:
        self.job, self.job_seen_at = job, time.monotonic()
        waiting = job.status == "queued" and getattr(job, "queue_reason", None) == "no_capacity"
        self.view.update(self.run_id, status="queued: no capacity" if waiting else job.status,
                         obtained=self._obtained(job) or "",
                         region=job_region(job) or "", cost_usd=job.cost_usd)

    def _on_page(self, page) -> None:
        if self.job is not None and page.status != self.job.status and not self.job.finished:
            self.view.update(self.run_id, status=page.status)

    @staticmethod
    def _obtained(job) -> str | None:
        """The GPU it ran on; before it had a machine the API shows the first candidate, so none yet."""
        if job is None or job.status == "queued" or (job.finished and job.started_at is None):
            return None
        return job.gpu_type if job.gpu_count == 1 else f"{job.gpu_type}:{job.gpu_count}"

    # --- stopping ----------------------------------------------------------------------------
    async def cancel_and_confirm(self, why: str) -> None:
        """Cancel, then read the status until the API shows the job ended (cancelled, or ended on its own)."""
        from .stopping import cancel_job

        job_id = self.job.id
        self.view.update(self.run_id, status="cancelling")
        job = await cancel_job(self.client, job_id, self.pace.confirm_timeout_s, min(2.0, self.pace.poll_s))
        if job is not None:
            self._seen(job)
        self.cancel_confirmed = self.job.finished
        if self.cancel_confirmed:
            self.view.say(self.run_id, f"job {job_id} {self.job.status} ({why}); cost ${self.job.cost_usd or 0:.4f}")
        else:
            self.notes.append(f"job {job_id} not confirmed stopped: run gpubench-launch cancel {self.run_id}")

    async def emergency_cancel(self) -> None:
        """Something went wrong in the launcher itself: stop the job before leaving."""
        if self.job is None or self.job.finished:
            return
        with contextlib.suppress(BaseException):  # best effort on the way out; cleanup finds the rest
            await asyncio.wait_for(self.client.jobs.cancel(self.job.id), timeout=30)

    # --- the end -------------------------------------------------------------------------------
    async def collect_facts(self) -> dict[str, Any]:
        job_id = self.job.id
        if not self.job.finished and self.lost is None:
            try:
                self._seen(await self.client.jobs.get(job_id))
            except api_errors() as exc:
                self.notes.append(f"final status unknown: {describe(exc, self.launch.redact)}")
        facts: dict[str, Any] = {
            "provider": self.launch.plan.provider,
            "via": "job",
            "run_id": self.run_id,
            "job_id": job_id,
            "status": self.job.status,
            "exit_code": self.job.exit_code,
            "error": self.job.error,
            "gpu_requested": [c.wire for c in self.run.candidates],
            "gpu_type": self._obtained(self.job),
            "gpu_count": self.job.gpu_count,
            "region": job_region(self.job),
            "cost_usd": self.job.cost_usd,
            "gpu_hours": None,  # billed in dollars: cost_usd
            "cost_per_hour": self.job.cost_per_hour,
            "created_at": self.job.created_at,
            "started_at": self.job.started_at,
            "ended_at": self.job.ended_at,
            "attempts": [a.model_dump(mode="json") for a in self.job.attempts],
            "stopped_by": self.stopped_by,
            "cancel_confirmed": self.cancel_confirmed,
            "lost_contact": self.lost,
            "stream_lost": self.stream_lost,
            "follow": self.follower.stats() if self.follower else None,
            "job": self.job.model_dump(mode="json", exclude={"webhook_secret"}),
        }
        for name, call in (
            ("events", lambda: self.client.jobs.events(job_id)),
            ("metrics", lambda: self.client.jobs.metrics(job_id)),
            ("artifacts", lambda: self.client.jobs.artifacts.list(job_id)),
        ):
            if self.lost is not None:
                facts[name] = None
                continue
            try:
                facts[name] = [item.model_dump(mode="json") for item in await call()]
            except api_errors() as exc:
                facts[name] = None
                facts.setdefault("fact_errors", {})[name] = describe(exc, self.launch.redact)
        return facts

    def stream_incomplete(self, folder: RunFolder) -> bool:
        """Whether records may be missing from the stream (so the job's artifacts are read): the job
        ended, and its log was not read to the end, was truncated, or never said the run finished."""
        f = self.follower
        if self.job is None or not self.job.finished or self.lost is not None:
            return False
        return f is None or not f.done or f.truncated or folder.stream.finished is None

    async def recover(self, folder: RunFolder) -> dict[str, Any]:
        from .artifacts import describe_counts, recover_into

        got = await recover_into(self.client, self.job.id, self.run_id, folder.path, folder.feed, self.launch.redact)
        if got.get("recovered_from"):
            self.notes.append(describe_counts(got["record_counts"]))
        else:
            self.notes.append(got["recovery_error"])
        return got

    def exit_code(self, folder: RunFolder) -> int:
        if self.stopped_by == "interrupt":
            return errors.INTERRUPTED
        if self.lost is not None:
            self.notes.append(f"lost the API: {self.lost}; the job's own max_runtime_minutes still stops it")
            return errors.LAUNCHER_TROUBLE
        if self.cancel_confirmed is False:
            return errors.LAUNCHER_TROUBLE
        if self.stopped_by is not None:
            return errors.LIMIT_REACHED
        if self.job.status != "succeeded":
            detail = f"exit code {self.job.exit_code}" if self.job.exit_code is not None else (self.job.error or "")
            why = folder.error_line()  # the job's own reason, from its output (else only in run.log)
            self.notes.append(f"job {self.job.status}: {detail}".rstrip(": ") + (f": {why}" if why else ""))
            return errors.JOB_NOT_SUCCEEDED
        return folder.records_code()
