"""Idempotency-Key replay: the same key answers the same result, and a second request while
the first is still being handled is told so (409 ``idempotency_in_progress``)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from .wire import ApiError


@dataclass
class _Entry:
    result_id: str | None
    """None while the first request with the key is still in flight."""
    since: float


class IdempotencyKeys:
    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def begin(self, scope: str, key: str) -> str | None:
        """The id a finished request with this key made (replay it), or None: the key is now claimed."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get((scope, key))
            if entry is not None and entry.result_id is not None and now - entry.since > self._ttl_s:
                entry = None
            if entry is None:
                self._entries[(scope, key)] = _Entry(None, now)
                return None
            if entry.result_id is None:
                raise ApiError(
                    409,
                    "conflict",
                    "A request with this Idempotency-Key is still being handled",
                    {"reason": "idempotency_in_progress"},
                )
            return entry.result_id

    def complete(self, scope: str, key: str, result_id: str) -> None:
        with self._lock:
            self._entries[(scope, key)] = _Entry(result_id, time.monotonic())

    def abandon(self, scope: str, key: str) -> None:
        """The claimed request failed: the next one with the key starts afresh."""
        with self._lock:
            self._entries.pop((scope, key), None)
