"""One client process's part of a load: its warm-up, then its users (closed loop) or its arrivals (open loop).

The load is planned once (run.py builds a Plan: every request's bytes, and the open loop's schedule) and split into
shares, one per client process; `drive_share` runs one share on an event loop and returns its raw responses parsed
(client.py), its start and end on the one clock every process on a machine shares, its CPU time and its peak memory.
fanout.py runs a share in each of several processes, run.py runs one in the calling process.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import itertools
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gpubench.loadgen import client
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.http_client import Pool, Target
from gpubench.loadgen.spec import LoadSpec

Progress = Callable[..., None]  # progress(phase, done=None, total=None, message=None), as SetupContext's
SPIN_S = 0.0015  # an open-loop request is awaited by sleeping until this long before it is due, then by yielding
# Client processes start together this long after the last one is ready: time for each to open again the connections
# the server closed while it waited for the others (a local connect is well under a millisecond; some hundreds of them
# at once, on cores the server is using, take tens of milliseconds).
START_LEAD_S = 0.25
PROCESS_NAME = b"gpubench-client"  # data/process_roles.csv: a utilisation sample tells the client from the server
PR_SET_NAME = 15


class LoadFailed(RuntimeError):
    """The load could not be measured as asked; str() is one line with the counts."""


@dataclass
class Plan:
    """Everything a client process needs, built once before any request is sent (it is pickled to each)."""

    spec: LoadSpec
    bodies: list[tuple[bytes, int | None]]  # prepared timed requests and their exact prompt lengths
    warm_bodies: list[tuple[bytes, int | None]]
    due: list[float] | None  # open loop: when each timed request is due, seconds from the start
    count_way: str = "chunks"  # how the requests ask the server to say each chunk's token count (token_counts.py)


@dataclass
class ShareResult:
    records: list[RequestRecord]
    warmup: list[RequestRecord]
    started: float  # perf_counter (one clock for every process on a machine: CLOCK_MONOTONIC)
    ended: float
    cpu_s: float
    peak_rss_bytes: int = 0  # the process's peak resident memory (getrusage), the load's records included
    timed_connections: int = 0  # connections opened while timing (none when the pool was filled before)


class LocalCounter:
    """The next request index for the users of one process (fanout.SharedCounter for several)."""

    def __init__(self) -> None:
        self._next = itertools.count()

    def take(self) -> int:
        return next(self._next)


def split(total: int | None, parts: int) -> list[int | None]:
    """total as `parts` near-equal integers (the first ones larger), or None for each when total is None."""
    if total is None:
        return [None] * parts
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


async def drive_share(load: Plan, share: int, shares: int, counter, done: Callable[[], None],
                      clock: Callable[[], float], start_at: Callable[[], Awaitable[float]] | None = None,
                      on_start: Callable[[], None] = lambda: None) -> ShareResult:
    """One client process's part of the load: its warm-up requests, then (closed loop) its users taking the
    next request index from `counter` or (open loop) every `shares`-th arrival from the `share`-th. `start_at`
    (several processes) waits, the event loop running, until every process is warm and returns the common start
    time; else on_start runs between the warm-up and the start. Before the start the pool holds a connection for
    each request this share may have in flight: a warm-up's connections idle while the others finish theirs, and a
    server closes idle ones (uvicorn after 5 s), so without this up to every user of a share would connect again
    inside the timed window, on a server that is taking the first requests in."""
    spec = load.spec
    pool = Pool(Target.parse(spec.url))
    users = split(spec.users, shares)[share]
    in_flight = split(spec.concurrency, shares)[share] or 1

    def send(index: int, body: tuple[bytes, int | None], due: float | None = None):
        return client.send(pool, body[0], index, body[1], spec.timeout_s, due)

    try:
        warm = list(enumerate(load.warm_bodies))[share::shares]
        warmup = []
        if warm:
            raw = await _closed_loop(send, dict(warm), iter([i for i, _ in warm]).__next__,
                                     min(users or len(warm), len(warm)))
            warmup = [client.parse(r, load.count_way) for r in raw]
            if bad := [r for r in warmup if not r.ok]:
                raise LoadFailed(f"warm-up request failed ({len(bad)} of {len(warmup)}): {bad[0].error_kind}:"
                                 f" {bad[0].error}"[:500])
        gc.collect()
        gc.freeze()  # what exists now is never collected again: fewer and shorter pauses while timing
        if start_at is None:
            await pool.fill(in_flight, spec.timeout_s)
            on_start()
            started = time.perf_counter()
        else:
            started = await start_at()
            await pool.fill(in_flight, spec.timeout_s)
        if (wait := started - time.perf_counter()) > 0:
            await asyncio.sleep(wait)
        opened = pool.opened
        cpu = clock()
        bodies = dict(enumerate(load.bodies))
        if load.due is None:
            raw = await _closed_loop(send, bodies, _bounded(counter, len(bodies)), users, done)
        else:
            mine = range(share, len(bodies), shares)
            raw = await _open_loop(send, bodies, [(i, started + load.due[i]) for i in mine], users, done)
        ended, cpu = time.perf_counter(), clock() - cpu
    finally:
        gc.unfreeze()
        pool.close()
    records = [client.parse(r, load.count_way) for r in raw]
    return ShareResult(records, warmup, started, ended, cpu, peak_rss_bytes(), pool.opened - opened)


def name_process() -> None:
    """Name this process `gpubench-client` (its /proc comm): a client process, or the client's gauge sampler."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, PROCESS_NAME, 0, 0, 0)


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far (Linux's ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _bounded(counter, total: int) -> Callable[[], int]:
    def take() -> int:
        index = counter.take()
        if index >= total:
            raise StopIteration
        return index
    return take


async def _closed_loop(send, bodies: dict, take: Callable[[], int], users: int,
                       done: Callable[[], None] = lambda: None) -> list:
    """`users` users, each sending the next unsent request (take() raises StopIteration when none is left)
    as soon as its previous one finished."""
    results = []

    async def user() -> None:
        while True:
            try:
                index = take()
            except StopIteration:
                return
            results.append(await send(index, bodies[index]))
            done()

    await asyncio.gather(*(user() for _ in range(max(1, min(users, len(bodies))))))
    return results


async def _open_loop(send, bodies: dict, due: list[tuple[int, float]], cap: int | None,
                     done: Callable[[], None] = lambda: None) -> list:
    """Each request sent when it is due (perf_counter times); `cap` bounds those in flight, and a request
    waiting for a slot keeps its due time, so its schedule delay and E2E from schedule count the wait."""
    slots = asyncio.Semaphore(cap) if cap else None

    async def one(index: int, at: float):
        if slots is None:
            result = await send(index, bodies[index], at)
        else:
            async with slots:
                result = await send(index, bodies[index], at)
        done()
        return result

    tasks = []
    for index, at in due:
        if (wait := at - time.perf_counter() - SPIN_S) > 0:
            await asyncio.sleep(wait)
        while time.perf_counter() < at:  # the last stretch: epoll's whole-millisecond timeouts would overshoot
            await asyncio.sleep(0)
        tasks.append(asyncio.create_task(one(index, at)))
        await asyncio.sleep(0)  # the task writes its request now; a late pacer would otherwise queue several first
    return list(await asyncio.gather(*tasks))


class Ticker:
    """Progress at most ten times a run: each report is a line written while streams are open."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total, self.done = progress, total, 0
        self.every = max(1, total // 10)

    def tick(self, count: int = 1) -> None:
        before, self.done = self.done, self.done + count
        if self.done // self.every > before // self.every or (self.done == self.total and before < self.total):
            self.progress("timed", self.done, self.total)
