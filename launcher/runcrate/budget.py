"""One request budget for the whole launcher process: every HTTP request to the Runcrate API (log
reads, status checks, submits, the SDK's own retries) waits here for a token first.

Why: the rate limit is per API key, and the first-matmul post saw minutes of HTTP 429 when one
client polled every 2 s while every 10 s was fine. Pacing each job on its own multiplies the load
by the number of jobs, so the jobs of one launcher share this budget instead.

- A token bucket: `rate` requests/s sustained (default 10 / GPUBENCH_POLL_S, so 1/s in real use;
  GPUBENCH_API_RATE sets it), short bursts up to `burst` (GPUBENCH_API_BURST, default 10).
- Fair: each job (the id in the request's path) is a lane; waiting lanes are served in turn, so a
  chatty job cannot starve a quiet one; requests not about one job share the "launcher" lane.
- On a 429 the rate halves (down to a twentieth) and no request goes out until its Retry-After has
  passed; each answer that is not a 429 gives back 1/30 of the rate, so it speeds up again slowly.

It hooks into the SDK's httpx client through httpx's public event hooks, so every attempt counts,
including the ones the SDK retries on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from ..errors import LaunchError
from ..pace import _env_float

_LANE = re.compile(r"/api/v1/(?:jobs|instances|job-groups)/([^/?]+)")
_NOT_A_JOB = {"uploads", "types"}


def lane_of(path: str) -> str:
    """The job (or instance) a request is about, from its path; 'launcher' for the rest."""
    match = _LANE.search(path)
    if match is None or match.group(1) in _NOT_A_JOB:
        return "launcher"
    return match.group(1)


class RequestBudget:
    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = max(1.0, burst)
        self.clock = clock
        self.current_rate = rate
        self.min_rate = rate / 20  # however many 429s: 1 request per 20 s at the default rate
        self.tokens = self.burst
        self.refilled_at = clock()
        self.paused_until = 0.0
        self.lanes: OrderedDict[str, deque[asyncio.Future]] = OrderedDict()
        self.sent = 0
        self.rate_limited = 0
        self.waited_s = 0.0
        self.listeners: list[Callable[[str | None], None]] = []
        self._said: str | None = None
        self._said_at = float("-inf")
        self._wakeup: asyncio.Event | None = None
        self._dispatcher: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_env(cls) -> RequestBudget:
        poll = _env_float("GPUBENCH_POLL_S", 10.0)
        return cls(rate=_env_float("GPUBENCH_API_RATE", 10.0 / poll), burst=_env_float("GPUBENCH_API_BURST", 10.0))

    # --- taking a token ----------------------------------------------------------------------
    async def acquire(self, lane: str = "launcher") -> None:
        self._bind_loop()
        self._refill()
        if not self.waiting() and self.tokens >= 1 and self.clock() >= self.paused_until:
            self._take()
            return
        future = asyncio.get_running_loop().create_future()
        self.lanes.setdefault(lane, deque()).append(future)
        self._wakeup.set()
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch(), name="request-budget")
        asked = self.clock()
        try:
            await future
        finally:
            self.waited_s += self.clock() - asked
            if not future.done():
                future.cancel()

    def waiting(self) -> int:
        return sum(1 for queue in self.lanes.values() for f in queue if not f.done())

    def _take(self) -> None:
        self.tokens -= 1
        self.sent += 1

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.refilled_at) * self.current_rate)
        self.refilled_at = now

    async def _dispatch(self) -> None:
        """Hands out tokens to the waiting lanes in turn, as fast as the rate allows."""
        while True:
            self._drop_cancelled()
            if not self.lanes:
                self._tell()
                return
            self._refill()
            now = self.clock()
            if now < self.paused_until or self.tokens < 1:
                wait = max(self.paused_until - now, (1 - self.tokens) / self.current_rate, 0.001)
                self._tell()
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):  # woken early when the rate changes
                    await asyncio.wait_for(self._wakeup.wait(), timeout=wait)
                continue
            lane, queue = next(iter(self.lanes.items()))
            future = queue.popleft()
            if queue:
                self.lanes.move_to_end(lane)  # its next request waits for the other lanes' turn
            else:
                del self.lanes[lane]
            self._take()
            future.set_result(None)
            await asyncio.sleep(0)

    def _drop_cancelled(self) -> None:
        for lane in list(self.lanes):
            queue = self.lanes[lane]
            while queue and queue[0].done():
                queue.popleft()
            if not queue:
                del self.lanes[lane]

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new asyncio.run in the same process: nothing carries over
            self._loop, self._wakeup, self._dispatcher = loop, asyncio.Event(), None
            self.lanes.clear()

    # --- what the API answered -----------------------------------------------------------------
    def answered(self, status: int, retry_after_s: float | None) -> None:
        if status == 429:
            self.rate_limited += 1
            self._refill()
            self.current_rate = max(self.min_rate, self.current_rate / 2)
            self.tokens = min(self.tokens, 0.0)
            pause = retry_after_s if retry_after_s is not None else 1 / self.current_rate
            self.paused_until = max(self.paused_until, self.clock() + pause)
            if self._wakeup is not None:
                self._wakeup.set()
            self._tell()
        elif self.current_rate < self.rate:
            self._refill()
            self.current_rate = min(self.rate, self.current_rate + self.rate / 30)
            self._tell()

    # --- what the live view shows --------------------------------------------------------------
    def holding_back(self) -> str | None:
        """A short line while requests wait (queued behind the budget, or slowed after a 429), else None."""
        slowed = self.current_rate < self.rate
        waiting = self.waiting()
        if not slowed and waiting == 0:
            return None
        text = f"holding back API requests: {self.current_rate:.2g}/s of {self.rate:.2g}/s"
        if slowed:
            text += f" after HTTP 429 (x{self.rate_limited})"
        if waiting:
            text += f", {waiting} waiting"
        return text

    def _tell(self) -> None:
        """Listeners hear of changes in kind (queued / slowed after a 429 / neither), not of every count;
        queued <-> neither flips at most once per 30 s, so a log stays short."""
        state = self.holding_back()
        kind = None if state is None else ("slowed" if self.current_rate < self.rate else "queued")
        now = self.clock()
        if kind == self._said or ("slowed" not in (kind, self._said) and now - self._said_at < 30):
            return
        self._said, self._said_at = kind, now
        for listener in list(self.listeners):
            listener(state)

    # --- the SDK hook ------------------------------------------------------------------------
    def attach(self, sdk_client) -> None:
        """Route every request of an AsyncRuncrate through this budget."""
        http = sdk_client._transport._client  # the SDK's httpx.AsyncClient (no public handle)
        hooks = http.event_hooks
        hooks["request"] = [*hooks.get("request", []), self._on_request]
        hooks["response"] = [*hooks.get("response", []), self._on_response]
        http.event_hooks = hooks

    async def _on_request(self, request) -> None:
        await self.acquire(lane_of(request.url.path))

    async def _on_response(self, response) -> None:
        value = response.headers.get("retry-after")
        try:
            retry_after = min(max(float(value), 0.0), 60.0) if value is not None else None
        except ValueError:
            retry_after = None
        self.answered(response.status_code, retry_after)

    def stats(self) -> dict:
        return {"requests": self.sent, "rate_limited": self.rate_limited, "rate": self.rate,
                "rate_now": round(self.current_rate, 4), "waited_s": round(self.waited_s, 3)}


_BUDGET: tuple[tuple, RequestBudget] | None = None
_SETTINGS = ("GPUBENCH_POLL_S", "GPUBENCH_API_RATE", "GPUBENCH_API_BURST")


def process_budget() -> RequestBudget:
    """The one budget of this launcher process, built from the environment (again only if its settings
    change, as between the in-process launches of a test session)."""
    global _BUDGET
    settings = tuple(os.environ.get(name) for name in _SETTINGS)
    if _BUDGET is None or _BUDGET[0] != settings:
        try:
            _BUDGET = (settings, RequestBudget.from_env())
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
    return _BUDGET[1]
