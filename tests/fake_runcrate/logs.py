"""A job's output, stdout and stderr combined as the API gives it (no field says which): an append-only
list of chunks with increasing ``seq``, read by page or held."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .wire import iso, utc_now

TRUNCATION_MARKER = "\n[... output truncated: the middle of this log was dropped ...]\n"


@dataclass
class LogChunk:
    seq: int | None
    ts: datetime | None
    text: str

    def json(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts": iso(self.ts), "text": self.text}


@dataclass
class LogPage:
    chunks: list[LogChunk]
    cursor: int
    at_end: bool


class LogStream:
    """Output kept like the real API: the first half of the cap and the newest output, with a
    marker chunk (``seq``/``ts`` null) where the middle was dropped."""

    def __init__(self, cap_bytes: int = 10 * 1024 * 1024, page_bytes: int = 1024 * 1024) -> None:
        self._cap_bytes = cap_bytes
        self._page_bytes = page_bytes
        self._changed = threading.Condition()
        self._head: list[LogChunk] = []
        self._head_bytes = 0
        self._tail: deque[LogChunk] = deque()
        self._tail_bytes = 0
        self._marker: LogChunk | None = None
        self._last_seq = 0
        self.total_bytes = 0
        self.ended = False
        self._closed = False

    @property
    def truncated(self) -> bool:
        return self._marker is not None

    def append(self, text: str) -> None:
        if not text:
            return
        with self._changed:
            self._last_seq += 1
            chunk = LogChunk(self._last_seq, utc_now(), text)
            size = len(text.encode())
            self.total_bytes += size
            if self._head_bytes < self._cap_bytes // 2 and not self._tail:
                self._head.append(chunk)
                self._head_bytes += size
            else:
                self._tail.append(chunk)
                self._tail_bytes += size
                while self._head_bytes + self._tail_bytes > self._cap_bytes and len(self._tail) > 1:
                    dropped = self._tail.popleft()
                    self._tail_bytes -= len(dropped.text.encode())
                    if self._marker is None:
                        self._marker = LogChunk(None, None, TRUNCATION_MARKER)
            self._changed.notify_all()

    def end(self) -> None:
        """No more output will come (the job ended and its pipes are drained)."""
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def close(self) -> None:
        """Release every held reader (the fake is stopping)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_for_news(self, after: int, timeout_s: float) -> None:
        """Hold until there is output after ``after``, the output ended, or the timeout passed."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._last_seq > after or self.ended or self._closed, timeout=timeout_s
            )

    def page(self, after: int, limit: int) -> LogPage:
        with self._changed:
            chunks: list[LogChunk] = []
            size = 0
            cursor = after
            for chunk in self._readable_after(after):
                chunk_size = len(chunk.text.encode())
                if chunks and (len(chunks) >= limit or size + chunk_size > self._page_bytes):
                    break
                chunks.append(chunk)
                size += chunk_size
                # The marker (seq None) stands for every dropped seq: the reader is past them.
                passed = chunk.seq if chunk.seq is not None else self._tail[0].seq - 1
                cursor = max(cursor, passed)
            return LogPage(chunks, cursor, cursor >= self._last_seq)

    def _readable_after(self, after: int) -> list[LogChunk]:
        readable = [chunk for chunk in self._head if chunk.seq > after]
        if self._marker is not None and self._tail and after < self._tail[0].seq - 1:
            readable.append(self._marker)
        readable.extend(chunk for chunk in self._tail if chunk.seq > after)
        return readable
