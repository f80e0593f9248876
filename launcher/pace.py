"""How often the launcher talks to the API: slow enough for the rate limit, fast enough to feel live.

Runcrate's own advice (shared/seeds: the first-matmul post): polling every 2 s hit HTTP 429 for
minutes, every 10 s was fine. An idle job costs about one request per `poll_s` seconds: a held
log read (the server holds it up to 25 s) plus a status read every `3 * poll_s`. Tests shrink it
with GPUBENCH_POLL_S. On top of this per-job pacing, every request of the launcher process waits for
the one request budget all its jobs share (runcrate/budget.py: about 1 request/s in all, GPUBENCH_API_RATE).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number of seconds") from None
    if number <= 0:
        raise ValueError(f"{name}={value!r} must be above 0")
    return number


@dataclass(frozen=True)
class Pace:
    poll_s: float = 10.0
    stream_gap_s: float = 1.0
    """Least time between two log reads that both returned output (output is batched, not polled)."""
    ssh_retry_s: float = 2.0
    lost_after_s: float = 600.0
    """Give up on a run when the API has not answered for this long (the job's own limit still stops it)."""
    confirm_timeout_s: float = 180.0
    """How long to wait for a cancelled job or terminated instance to show as stopped."""
    drain_timeout_s: float = 60.0
    """How long to keep reading a stopped job's remaining output."""
    boot_timeout_s: float = 1800.0
    """How long an instance may take to run and answer SSH (VMs took up to 12 min in the study)."""

    @property
    def status_gap_s(self) -> float:
        return 3 * self.poll_s

    @property
    def idle_gap_s(self) -> float:
        """Least time between the starts of two log reads that both came back empty."""
        return 1.5 * self.poll_s

    @property
    def max_backoff_s(self) -> float:
        return max(60.0, 6 * self.poll_s)

    @classmethod
    def from_env(cls) -> Pace:
        poll = _env_float("GPUBENCH_POLL_S", 10.0)
        return cls(
            poll_s=poll,
            stream_gap_s=_env_float("GPUBENCH_STREAM_GAP_S", min(1.0, poll)),
            ssh_retry_s=_env_float("GPUBENCH_SSH_RETRY_S", min(2.0, poll)),
            lost_after_s=_env_float("GPUBENCH_LOST_AFTER_S", 600.0),
            confirm_timeout_s=_env_float("GPUBENCH_CONFIRM_TIMEOUT_S", max(180.0, 12 * poll)),
            drain_timeout_s=_env_float("GPUBENCH_DRAIN_TIMEOUT_S", 60.0),
            boot_timeout_s=_env_float("GPUBENCH_BOOT_TIMEOUT_S", 1800.0),
        )
