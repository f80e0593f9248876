"""How fast the fake's world runs: every API "minute" lasts ``minute_s`` real seconds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Settings:
    api_key: str = "rc_live_test"
    minute_s: float = 60.0
    runtime_minute_s: float | None = None
    """Real seconds a minute of a job's or an instance's ``max_runtime_minutes`` lasts; None: ``minute_s``. A test whose
    job runs a real workload sets it apart, so busy cores do not trip its safety net while billing stays fast."""
    follow_hold_s: float = 25.0
    queue_s: float = 0.2
    """Real seconds a job stays ``queued`` before it is placed, even with capacity."""
    start_s: float = 0.2
    """Real seconds a job stays ``starting`` (machine up, billed) before its command runs."""
    container_ready_s: float = 4.0
    vm_ready_s: float | None = None
    """Real seconds a VM instance takes to run; None means 3 API minutes."""
    capacity_poll_minutes: float = 0.5
    """How often a job queued for capacity looks again (``next_attempt_at``)."""
    idempotency_ttl_s: float = 24 * 3600.0
    log_cap_bytes: int = 10 * 1024 * 1024
    ssh_early: bool = False
    """Instances run sshd (and show ip/ssh_port) while still ``deploying``, as some real ones did."""
    workspace_root: Path | None = None
    run_images: bool = False
    """A job whose image the local Docker engine has runs in a container of it (docker_job.py), not with bash."""

    def minutes(self, count: float) -> float:
        """Real seconds that ``count`` API minutes last."""
        return count * self.minute_s

    def runtime_minutes(self, count: float) -> float:
        """Real seconds that ``count`` minutes of a job's or an instance's ``max_runtime_minutes`` last."""
        return count * (self.runtime_minute_s if self.runtime_minute_s is not None else self.minute_s)

    def api_seconds(self, real_seconds: float) -> float:
        """API seconds (for billing) that ``real_seconds`` of wall-clock time stand for."""
        return real_seconds * 60.0 / self.minute_s

    @property
    def vm_ready_real_s(self) -> float:
        return self.vm_ready_s if self.vm_ready_s is not None else self.minutes(3)
