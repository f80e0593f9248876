"""API calls of the instance path, retried here rather than in the SDK, so that every failure met
(4xx/5xx on create, 429s on polls) is counted and kept: the first-matmul study reports them.

The rules are the SDK's own: a request that is safe to repeat is retried on 429/5xx and lost
connections; an instance create only on 429 and 503 (nothing was done). A Retry-After is honoured.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..redact import Redactor
from .follow import retry_after_s


class CountedCalls:
    def __init__(self, redact: Redactor, origin: float | None = None):
        self.redact = redact
        self.origin = time.monotonic() if origin is None else origin
        self.failures: list[dict[str, Any]] = []

    def count(self, status: int) -> int:
        return sum(1 for f in self.failures if f["status"] == status)

    def count_range(self, low: int, high: int) -> int:
        return sum(1 for f in self.failures if f["status"] is not None and low <= f["status"] <= high)

    async def __call__(self, what: str, call: Callable[[], Awaitable[Any]], *, idempotent: bool = True,
                       attempts: int = 4) -> Any:
        from runcrate import ApiError, ConnectionError, TimeoutError

        for attempt in range(attempts):
            try:
                return await call()
            except ApiError as exc:
                self._note(what, exc.status_code, exc.code, exc.message)
                status = exc.status_code
                retry = status in (429, 503) or (
                    idempotent and status in (500, 502, 504) and exc.code != "launch_refused")
                if not retry or attempt == attempts - 1:
                    raise
                delay = retry_after_s(exc)
            except (ConnectionError, TimeoutError) as exc:
                self._note(what, None, type(exc).__name__.lower(), str(exc))
                if not idempotent or attempt == attempts - 1:
                    raise
                delay = None
            if delay is None:
                delay = min(0.5 * 2 ** attempt, 30.0) * (1 + 0.25 * random.random())
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _note(self, what: str, status: int | None, code: str, message: str) -> None:
        self.failures.append({
            "call": what, "status": status, "code": code, "message": self.redact(" ".join(str(message).split()))[:200],
            "at_s": round(time.monotonic() - self.origin, 3),
        })
