"""What the fake knows about a job, its attempts and its group, and how each looks on the wire."""

from __future__ import annotations

import enum
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .artifacts import Artifact
from .job_spec import GpuChoice, JobSpec
from .logs import LogStream
from .settings import Settings
from .wire import iso, utc_now

LIVE_STATUSES = frozenset({"queued", "starting", "running"})


class Signal(enum.Enum):
    """What a job's runner is asked to do from outside."""

    CANCEL = "cancel"
    MACHINE_FAILURE = "machine_failure"
    SHUTDOWN = "shutdown"


@dataclass
class Attempt:
    number: int
    gpu: GpuChoice
    """The GPU it runs on once placed; until then the one shown for the job."""
    status: str = "queued"
    region: str | None = None
    deployment_id: str | None = None
    cost_per_hour: float | None = None
    gpu_memory_gb: int = 0
    machine_up: float | None = None
    """time.monotonic() when its machine came up (billing starts)."""
    machine_down: float | None = None
    command_started: float | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    error: str | None = None
    workspace: Path | None = None

    def cost_usd(self, settings: Settings, now: float) -> float | None:
        if self.machine_up is None or self.cost_per_hour is None:
            return None
        end = self.machine_down if self.machine_down is not None else now
        return self.cost_per_hour * settings.api_seconds(end - self.machine_up) / 3600.0

    def json(self, settings: Settings, now: float) -> dict[str, Any]:
        cost = self.cost_usd(settings, now)
        return {
            "attempt": self.number,
            "deployment_id": self.deployment_id,
            "status": self.status,
            "exit_code": self.exit_code,
            "error": self.error,
            "started_at": iso(self.started_at),
            "ended_at": iso(self.ended_at),
            "cost_usd": None if cost is None else round(cost, 6),
            "gpu_type": self.gpu.gpu_type,
            "gpu_count": self.gpu.gpu_count,
            "region": self.region,
        }


@dataclass
class Job:
    id: str
    spec: JobSpec
    logs: LogStream
    group_id: str | None = None
    job_index: int = 0
    rerun_of: str | None = None
    status: str = "queued"
    created_at: datetime = field(default_factory=utc_now)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    queue_reason: str | None = None
    next_attempt_at: datetime | None = None
    exit_code: int | None = None
    error: str | None = None
    instance_id: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    webhook_secret: str = field(default_factory=lambda: f"whsec_{secrets.token_hex(16)}")
    signal: Signal | None = None
    wake: threading.Event = field(default_factory=threading.Event)
    """Set to make the runner look again (a signal, capacity or a group slot freed, the command ended)."""
    ended: threading.Event = field(default_factory=threading.Event)

    @property
    def attempt(self) -> Attempt:
        return self.attempts[-1]

    @property
    def live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def name(self) -> str:
        return self.spec.name or f"job-{self.id[-6:]}"

    @property
    def env(self) -> dict[str, str]:
        """The env values it was given (never on the wire: only their names are)."""
        return dict(self.spec.env)

    def add_event(self, kind: str, detail: str | None = None, attempt: int | None = None) -> None:
        self.events.append({"at": iso(utc_now()), "kind": kind, "detail": detail, "attempt": attempt})

    def cost_usd(self, settings: Settings, now: float) -> float | None:
        costs = [c for c in (a.cost_usd(settings, now) for a in self.attempts) if c is not None]
        return round(sum(costs), 6) if costs else None

    def metrics(self, settings: Settings, step_s: int) -> list[dict[str, Any]]:
        """A few plausible points per step over the time its commands ran."""
        points: list[dict[str, Any]] = []
        now = time.monotonic()
        for attempt in self.attempts:
            if attempt.command_started is None:
                continue
            end = attempt.machine_down if attempt.machine_down is not None else now
            api_span = settings.api_seconds(end - attempt.command_started)
            started = utc_now() - timedelta(seconds=now - attempt.command_started)
            total_mb = float(attempt.gpu_memory_gb * 1024)
            for index in range(min(max(1, math.ceil(api_span / step_s)), 500)):
                real_offset = settings.minutes(index * step_s / 60.0)
                util = 80.0 + (index * 7) % 15
                points.append({
                    "at": iso(started + timedelta(seconds=real_offset)),
                    "gpus": [
                        {"util": util, "mem_used_mb": round(total_mb * 0.62, 1), "mem_total_mb": total_mb}
                        for _ in range(attempt.gpu.gpu_count)
                    ],
                })
        return points

    def json(self, settings: Settings, *, with_secret: bool = False) -> dict[str, Any]:
        now = time.monotonic()
        spec = self.spec
        current = self.attempt
        points = [] if self.live else self.metrics(settings, 60)
        utils = [g["util"] for p in points for g in p["gpus"]]
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "command": spec.command,
            "gpu_type": current.gpu.gpu_type,
            "gpu_count": current.gpu.gpu_count,
            "gpu_candidates": [c.json() for c in spec.candidates],
            "region": current.region,
            "template": spec.template,
            "image": spec.image,
            "env_keys": sorted(spec.env),
            "storage_id": spec.storage_id,
            "max_runtime_minutes": spec.max_runtime_minutes,
            "capacity_wait_minutes": spec.capacity_wait_minutes,
            "queue_reason": self.queue_reason,
            "next_attempt_at": iso(self.next_attempt_at),
            "attempt": current.number,
            "max_retries": spec.max_retries,
            "retry_on": spec.retry_on,
            "retry_exit_codes": spec.retry_exit_codes,
            "attempts": [a.json(settings, now) for a in self.attempts],
            "exit_code": self.exit_code,
            "error": self.error,
            "instance_id": self.instance_id,
            "environment_id": "env_main",
            "tags": spec.tags,
            "group_id": self.group_id,
            "job_index": self.job_index,
            "rerun_of": self.rerun_of,
            "webhook_url": _webhook_display(spec.webhook_url),
            "webhook_events": spec.webhook_events,
            "webhook_secret": self.webhook_secret if with_secret and spec.webhook_url else None,
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "ended_at": iso(self.ended_at),
            "cost_per_hour": current.cost_per_hour,
            "cost_usd": self.cost_usd(settings, now),
            "log_bytes": self.logs.total_bytes,
            "logs_truncated": self.logs.truncated,
            "code": spec.code,
            "allow_cpu_container": spec.allow_cpu_container,
            "image_registry_auth": spec.image_registry_auth,
            "artifacts_count": len(self.artifacts),
            "gpu_util_avg": round(sum(utils) / len(utils), 1) if utils else None,
            "gpu_mem_peak_mb": max((g["mem_used_mb"] for p in points for g in p["gpus"]), default=None),
        }


def _webhook_display(url: str | None) -> str | None:
    """Only the host and the end of the path, as the API shows a callback."""
    if url is None:
        return None
    parts = urlsplit(url)
    return f"{parts.hostname}/…{parts.path[-6:]}" if parts.path else parts.hostname


@dataclass
class JobGroup:
    id: str
    count: int
    max_parallel: int
    member_ids: list[str]
    created_at: datetime = field(default_factory=utc_now)
    webhook_secret: str = field(default_factory=lambda: f"whsec_{secrets.token_hex(16)}")

    def json(self, members: list[Job], settings: Settings) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for job in members:
            counts[job.status] = counts.get(job.status, 0) + 1
        costs = [c for c in (j.cost_usd(settings, time.monotonic()) for j in members) if c is not None]
        return {
            "id": self.id,
            "count": self.count,
            "max_parallel": self.max_parallel,
            "status_counts": counts,
            "cost_usd": round(sum(costs), 6) if costs else None,
            "created_at": iso(self.created_at),
        }
