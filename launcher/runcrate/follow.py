"""Read a job's output as it is written, as whole lines, resuming from the last cursor after any
dropped connection or API error so that no line is lost or repeated.

The API answers chunks (raw fragments with an increasing `seq`) and a `cursor` to pass back as
`after`. The output is stdout and stderr combined, with nothing saying which a chunk came from: the
fragments are joined in order and cut into lines, and ingest.RecordStream finds the records among them.
A read with follow=true is held by the server until there is output or the job ended;
`done` says the job ended and everything was read. Reads are paced (see launcher/pace.py): one that came
back empty is not repeated sooner than `idle_gap_s` after the previous one started.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from gpubench.run.ingest import LineAssembler

from ..pace import Pace
from ..redact import Redactor
from .client import api_errors, describe


class LostContact(Exception):
    """The API did not answer for longer than Pace.lost_after_s."""


class ErrorClock:
    """Backoff while the API fails; LostContact once it has failed for too long."""

    def __init__(self, pace: Pace):
        self.pace = pace
        self.since: float | None = None
        self.delay = pace.poll_s
        self.count = 0
        self.rate_limited = 0

    def ok(self) -> None:
        self.since, self.delay = None, self.pace.poll_s

    async def failed(self, exc: BaseException, redact: Redactor) -> None:
        now = time.monotonic()
        self.count += 1
        if getattr(exc, "status_code", None) == 429:
            self.rate_limited += 1
        if self.since is None:
            self.since = now
        if now - self.since > self.pace.lost_after_s:
            raise LostContact(describe(exc, redact))
        retry_after = retry_after_s(exc)
        await asyncio.sleep(retry_after if retry_after is not None else self.delay)
        self.delay = min(self.delay * 2, self.pace.max_backoff_s)


def retry_after_s(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    try:
        value = response.headers.get("retry-after") if response is not None else None
        return min(max(float(value), 0.0), 60.0) if value is not None else None
    except ValueError:
        return None


class LogFollower:
    def __init__(
        self, client, job_id: str, on_line: Callable[[str], None], pace: Pace, redact: Redactor,
        on_page: Callable[[object], None] | None = None, follow: bool = True,
    ):
        self.follow = follow
        self.client = client
        self.job_id = job_id
        self.pace = pace
        self.redact = redact
        self.on_page = on_page
        self.cursor = 0
        self.last_seq = 0
        self.requests = 0
        self.errors = ErrorClock(pace)
        self.done = False
        self.truncated = False
        self._on_line = on_line
        self.assembler = LineAssembler(lambda line: self._on_line(self.redact(line)))

    async def run(self) -> None:
        """Read until the job ended and all its output was read (without follow: until what exists was read)."""
        while True:
            started = time.monotonic()
            self.requests += 1
            try:
                page = await self.client.jobs.logs(self.job_id, after=self.cursor, follow=self.follow)
            except api_errors() as exc:
                await self.errors.failed(exc, self.redact)
                continue
            self.errors.ok()
            for chunk in page.chunks:
                if chunk.seq is not None:
                    if chunk.seq <= self.last_seq:
                        continue  # already read (a server answering from an older cursor)
                    self.last_seq = chunk.seq
                    self.assembler.feed(chunk.text)
                else:  # the marker where the middle of the log was dropped: a line of its own
                    self.assembler.flush()
                    self.assembler.feed(chunk.text)
                    self.assembler.flush()
            self.cursor = max(self.cursor, page.cursor)
            self.truncated = self.truncated or page.truncated
            if self.on_page:
                self.on_page(page)
            if page.done or (not self.follow and not page.chunks):
                self.assembler.flush()
                self.done = page.done
                return
            gap = self.pace.stream_gap_s if page.chunks else self.pace.idle_gap_s
            wait = gap - (time.monotonic() - started)
            if wait > 0:
                await asyncio.sleep(wait)

    def stats(self) -> dict:
        return {
            "log_requests": self.requests, "log_errors": self.errors.count,
            "rate_limited": self.errors.rate_limited, "cursor": self.cursor,
            "lines": self.assembler.lines, "complete": self.done, "truncated": self.truncated,
        }
