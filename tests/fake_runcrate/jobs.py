"""The jobs of one fake workspace: submit, list, cancel, delete, rerun, groups, machine failures."""

from __future__ import annotations

import secrets
import shutil
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .artifacts import SignedUrls
from .catalogue import Capacity, placement
from .job_runner import JobRunner
from .job_spec import GpuChoice, JobSpec, parse_job_spec
from .job_state import Attempt, Job, JobGroup, Signal
from .logs import LogStream
from .settings import Settings
from .uploads import UploadStore
from .wire import ApiError, conflict, invalid, not_found

_SIGNAL_ANSWER_S = 120.0  # as long as the real cancel route may take; a container stop takes its grace and more


class JobBoard:
    def __init__(
        self,
        settings: Settings,
        instance_types: Callable[[], list[dict[str, Any]]],
        capacity: Capacity,
        uploads: UploadStore,
        signed_urls: SignedUrls,
        workspace_root: Path,
    ) -> None:
        self.settings = settings
        self._instance_types = instance_types
        self.capacity = capacity
        self.uploads = uploads
        self.signed_urls = signed_urls
        self._workspace_root = workspace_root
        self.lock = threading.RLock()
        self.jobs: dict[str, Job] = {}
        self.groups: dict[str, JobGroup] = {}
        self._runners: list[JobRunner] = []
        capacity.on_change(self.wake_queued)

    @property
    def instance_types(self) -> list[dict[str, Any]]:
        return self._instance_types()

    # ── submit ────────────────────────────────────────────────────────────────

    def parse(self, body: dict[str, Any]) -> JobSpec:
        return parse_job_spec(body, self.instance_types, self.uploads)

    def submit(self, spec: JobSpec, *, group_id: str | None = None, job_index: int = 0,
               rerun_of: str | None = None) -> Job:
        job = Job(
            id=f"job_{secrets.token_hex(8)}",
            spec=spec,
            logs=LogStream(self.settings.log_cap_bytes),
            group_id=group_id,
            job_index=job_index,
            rerun_of=rerun_of,
        )
        job.attempts.append(Attempt(1, spec.candidates[0]))
        job.add_event("created")
        if spec.code_upload_id:
            self.uploads.mark_used(spec.code_upload_id)
        runner = JobRunner(self, job)
        with self.lock:
            self.jobs[job.id] = job
            self._runners.append(runner)
        runner.start()
        return job

    def submit_group(self, body: dict[str, Any]) -> JobGroup:
        count, params, max_parallel = _group_shape(body)
        base = {k: v for k, v in body.items() if k not in ("count", "params", "max_parallel")}
        specs = [
            self.parse({**base, "env": {**(base.get("env") or {}), **(params[i] if params else {})}})
            for i in range(count)
        ]
        group = JobGroup(id=f"grp_{secrets.token_hex(8)}", count=count, max_parallel=max_parallel, member_ids=[])
        with self.lock:
            self.groups[group.id] = group
            for index, spec in enumerate(specs):
                group.member_ids.append(self.submit(spec, group_id=group.id, job_index=index).id)
        return group

    def rerun(self, job_id: str, overrides: dict[str, Any]) -> Job:
        old = self.get(job_id)
        body = {**old.spec.body, **{k: v for k, v in overrides.items() if k != "env"}}
        body["env"] = {**old.spec.env, **(overrides.get("env") or {})}
        body = {k: v for k, v in body.items() if v is not None}
        return self.submit(self.parse(body), rerun_of=old.id)

    # ── reading ───────────────────────────────────────────────────────────────

    def get(self, job_id: str) -> Job:
        with self.lock:
            job = self.jobs.get(job_id)
        if job is None:
            raise not_found("job", job_id)
        return job

    def group(self, group_id: str) -> JobGroup:
        with self.lock:
            group = self.groups.get(group_id)
        if group is None:
            raise not_found("job group", group_id)
        return group

    def members(self, group: JobGroup) -> list[Job]:
        with self.lock:
            return [self.jobs[i] for i in group.member_ids if i in self.jobs]

    def listing(
        self,
        *,
        statuses: set[str] | None,
        tags: dict[str, str],
        group_id: str | None,
        query: str | None,
        gpu_type: str | None,
        created_after: datetime | None,
    ) -> list[Job]:
        """Matching jobs, newest first."""
        with self.lock:
            jobs = sorted(self.jobs.values(), key=lambda j: (j.created_at, j.id), reverse=True)
        return [
            job
            for job in jobs
            if (statuses is None or job.status in statuses)
            and all(job.spec.tags.get(k) == v for k, v in tags.items())
            and (group_id is None or job.group_id == group_id)
            and (query is None or query.lower() in f"{job.name} {job.spec.command}".lower())
            and (gpu_type is None or job.attempt.gpu.gpu_type.lower() == gpu_type.lower())
            and (created_after is None or job.created_at > created_after)
        ]

    def json(self, job: Job, *, with_secret: bool = False) -> dict[str, Any]:
        with self.lock:
            return job.json(self.settings, with_secret=with_secret)

    def group_json(self, group: JobGroup, *, with_jobs: bool = False) -> dict[str, Any]:
        with self.lock:
            members = self.members(group)
            data = group.json(members, self.settings)
            if with_jobs:
                data["jobs"] = [j.json(self.settings, with_secret=True) for j in members]
                data["webhook_secret"] = group.webhook_secret if members and members[0].spec.webhook_url else None
            return data

    # ── what runners ask ──────────────────────────────────────────────────────

    def first_available(self, spec: JobSpec) -> GpuChoice | None:
        for choice in spec.candidates:
            if self.capacity.available(choice.gpu_type) and placement(
                self.instance_types, choice.gpu_type, choice.gpu_count, spec.region
            ):
                return choice
        return None

    def group_has_room(self, job: Job) -> bool:
        if job.group_id is None:
            return True
        with self.lock:
            group = self.groups[job.group_id]
            busy = sum(1 for j in self.members(group) if j.status in ("starting", "running") and j is not job)
            return busy < group.max_parallel

    def workspace_for(self, job: Job, attempt: int) -> Path:
        path = self._workspace_root / job.id / f"attempt-{attempt}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def job_ended(self, job: Job) -> None:
        if job.group_id is not None:
            self.wake_queued()

    def wake_queued(self) -> None:
        with self.lock:
            for job in self.jobs.values():
                if job.status == "queued":
                    job.wake.set()

    # ── changes from outside ──────────────────────────────────────────────────

    def cancel(self, job_id: str) -> Job:
        job = self.get(job_id)
        with self.lock:
            if job.status == "cancelled":
                return job
            if job.live:
                job.signal = Signal.CANCEL
                job.wake.set()
        job.ended.wait(_SIGNAL_ANSWER_S)
        if job.status != "cancelled":
            raise conflict(f"job {job.id} already ended as {job.status}", status=job.status)
        return job

    def cancel_group(self, group_id: str) -> JobGroup:
        group = self.group(group_id)
        for job in self.members(group):
            if job.live:
                self.cancel(job.id)
        return group

    def delete(self, job_id: str) -> None:
        job = self.get(job_id)
        with self.lock:
            if job.live:
                raise conflict(f"job {job.id} is still {job.status}: cancel it first", status=job.status)
            del self.jobs[job.id]
        self.signed_urls.forget(list(job.artifacts.values()))
        shutil.rmtree(self._workspace_root / job.id, ignore_errors=True)

    def fail_machine(self, job_id: str) -> None:
        """The machine under the job dies; returns once the runner has acted on it."""
        job = self.get(job_id)
        with self.lock:
            if job.status not in ("starting", "running"):
                raise ValueError(f"job {job_id} has no machine (it is {job.status})")
            attempt = job.attempt.number
            job.signal = Signal.MACHINE_FAILURE
            job.wake.set()
        deadline = time.monotonic() + _SIGNAL_ANSWER_S
        while job.live and job.attempt.number == attempt and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        """Ends every live job (killing its command) and waits for the runners."""
        with self.lock:
            for job in self.jobs.values():
                if job.live:
                    job.signal = Signal.SHUTDOWN
                    job.wake.set()
            runners = list(self._runners)
        for runner in runners:
            runner.thread.join(timeout=_SIGNAL_ANSWER_S)
        with self.lock:
            for job in self.jobs.values():
                job.logs.close()


def _group_shape(body: dict[str, Any]) -> tuple[int, list[dict[str, str]] | None, int]:
    params = body.get("params")
    if params is not None:
        if not isinstance(params, list) or not params or not all(
            isinstance(p, dict) and all(isinstance(v, str) for v in p.values()) for p in params
        ):
            raise invalid("params", "must be a non-empty list of objects of string values")
        count = len(params)
    else:
        count = body.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 1000:
            raise invalid("count", "must be between 1 and 1000")
    if count > 1000:
        raise invalid("params", "at most 1000 entries")
    max_parallel = body.get("max_parallel", count)
    if isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1:
        raise ApiError(422, "validation_error", "max_parallel: must be a positive integer", {"field": "max_parallel"})
    return count, params, min(max_parallel, count)
