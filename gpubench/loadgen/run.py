"""Drive a load: warm-up, then the timed requests (closed loop of users, or an open loop on a schedule).

`run_load` is synchronous (it runs the event loops) and returns a LoadRun; it raises LoadFailed when a
warm-up request fails or the share of failed timed requests passes spec.max_error_rate. The load is split
into shares, one per client process (spec.client_processes()): with one share it runs here; with several,
fanout.py runs each in a process of its own, all from one start time, and the records come back in the
order they were built, as from one process. Everything the records need is kept raw while the load runs
and parsed after (client.py); each share measures its own CPU time over the timed phase.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gpubench.loadgen import arrivals, client, prompts
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.http_client import Pool, Target
from gpubench.loadgen.metrics import summarize
from gpubench.loadgen.spec import LoadSpec

Progress = Callable[..., None]  # progress(phase, done=None, total=None, message=None), as SetupContext's
SPIN_S = 0.0015  # an open-loop request is awaited by sleeping until this long before it is due, then by yielding
START_LEAD_S = 0.05  # client processes start together this long after the last one is ready


class LoadFailed(RuntimeError):
    """The load could not be measured as asked; str() is one line with the counts."""


@dataclass(frozen=True)
class ClientShare:
    """One client process's cost over the timed phase."""

    cpu_s: float
    wall_s: float

    @property
    def cpu_pct(self) -> float:
        return 100.0 * self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class LoadRun:
    spec: LoadSpec
    records: list[RequestRecord]  # the timed requests, in the order they were built
    warmup: list[RequestRecord]
    duration_s: float  # first timed request sent -> last one finished
    client_cpu_s: float  # the client processes' CPU time over the timed phase, together
    clients: list[ClientShare] = field(default_factory=list)  # each client process

    @property
    def failed(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.ok]

    @property
    def errors(self) -> dict[str, int]:
        return dict(Counter(r.error_kind for r in self.failed).most_common())

    def metrics(self) -> dict[str, float]:
        return summarize(self.records, self.duration_s, self.client_cpu_s, self.spec.rate,
                         [c.cpu_pct for c in self.clients])

    def info(self) -> dict:
        """Facts for a result's `info`: errors by kind with an example each, usage mismatches, the client."""
        examples = {}
        for r in self.failed:
            examples.setdefault(r.error_kind, r.error)
        mismatches = [r for r in self.records if r.ok and r.usage_mismatch]
        return {
            "url": self.spec.url, "errors_by_kind": self.errors, "error_examples": examples,
            "usage_mismatch_example": mismatches[0].usage_mismatch if mismatches else None,
            "prompts_sent_as": prompts.sent_as(self.spec),
            "prompt_tokens_exact": all(r.prompt_tokens_sent is not None for r in self.records),
            "warmup_requests": len(self.warmup),
            "client_processes_cpu_pct": [round(c.cpu_pct, 1) for c in self.clients],
        }

    def check(self) -> None:
        failed, total = len(self.failed), len(self.records)
        if failed / total > self.spec.max_error_rate:
            kinds = ", ".join(f"{kind} x{n}" for kind, n in self.errors.items())
            example = self.failed[0].error or ""
            raise LoadFailed(f"{failed} of {total} requests failed ({failed / total:.1%} > the allowed"
                             f" {self.spec.max_error_rate:.1%}): {kinds}; first: {example}"[:500])


@dataclass
class Plan:
    """Everything a client process needs, built once before any request is sent (it is pickled to each)."""

    spec: LoadSpec
    bodies: list[tuple[bytes, int | None]]  # prepared timed requests and their exact prompt lengths
    warm_bodies: list[tuple[bytes, int | None]]
    due: list[float] | None  # open loop: when each timed request is due, seconds from the start


@dataclass
class ShareResult:
    records: list[RequestRecord]
    warmup: list[RequestRecord]
    started: float  # perf_counter (one clock for every process on a machine: CLOCK_MONOTONIC)
    ended: float
    cpu_s: float


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


def plan(spec: LoadSpec) -> Plan:
    target = Target.parse(spec.url)
    request_headers = client.headers()

    def prepared(prompt) -> tuple[bytes, int | None]:
        return target.request("POST", client.payload(spec, prompt), request_headers), prompt.tokens

    warm = prompts.build(spec, spec.warmup_requests, stream="warmup")
    timed = prompts.build(spec, spec.requests)
    due = arrivals.schedule(spec.requests, spec.rate, spec.burstiness, spec.seed) if spec.rate is not None else None
    return Plan(spec, [prepared(p) for p in timed], [prepared(p) for p in warm], due)


def run_load(spec: LoadSpec, progress: Progress | None = None, check: bool = True,
             on_timed: Callable[[], None] = lambda: None) -> LoadRun:
    """Send the spec's load and return what happened; with check, fail past the allowed error rate.
    on_timed runs once the warm-up is over, before the first timed request (a server's counters read there
    are the timed requests' own)."""
    progress = progress or (lambda *args, **kwargs: None)
    load = plan(spec)
    processes = spec.client_processes()
    if processes == 1:
        ticker = Ticker(progress, len(load.bodies))
        progress("warmup", 0, len(load.warm_bodies))
        def timed() -> None:
            on_timed()
            progress("timed", 0, len(load.bodies))

        shares = [asyncio.run(drive_share(load, 0, 1, LocalCounter(), ticker.tick, time.thread_time,
                                          on_start=timed))]
    else:
        from gpubench.loadgen import fanout

        shares = fanout.run_shares(load, processes, progress, on_timed)
    records: list[RequestRecord | None] = [None] * len(load.bodies)
    for share in shares:
        for record in share.records:
            records[record.index] = record
    run = LoadRun(spec=spec, records=records, warmup=sorted((r for s in shares for r in s.warmup),
                                                           key=lambda r: r.index),
                  duration_s=max(s.ended for s in shares) - min(s.started for s in shares),
                  client_cpu_s=sum(s.cpu_s for s in shares),
                  clients=[ClientShare(s.cpu_s, s.ended - s.started) for s in shares])
    if check:
        run.check()
    return run


async def drive_share(load: Plan, share: int, shares: int, counter, done: Callable[[], None],
                      clock: Callable[[], float], start_at: Callable[[], float] | None = None,
                      on_start: Callable[[], None] = lambda: None) -> ShareResult:
    """One client process's part of the load: its warm-up requests, then (closed loop) its users taking the
    next request index from `counter` or (open loop) every `shares`-th arrival from the `share`-th. `start_at`
    (several processes) blocks until every process is warm and returns the common start time; else on_start
    runs between the warm-up and the start."""
    spec = load.spec
    pool = Pool(Target.parse(spec.url))
    users = split(spec.users, shares)[share]

    def send(index: int, body: tuple[bytes, int | None], due: float | None = None):
        return client.send(pool, body[0], index, body[1], spec.timeout_s, due)

    try:
        warm = list(enumerate(load.warm_bodies))[share::shares]
        warmup = []
        if warm:
            raw = await _closed_loop(send, dict(warm), iter([i for i, _ in warm]).__next__,
                                     min(users or len(warm), len(warm)))
            warmup = [client.parse(r) for r in raw]
            if bad := [r for r in warmup if not r.ok]:
                raise LoadFailed(f"warm-up request failed ({len(bad)} of {len(warmup)}): {bad[0].error_kind}:"
                                 f" {bad[0].error}"[:500])
        gc.collect()
        gc.freeze()  # what exists now is never collected again: fewer and shorter pauses while timing
        if start_at is None:
            on_start()
        started = start_at() if start_at else time.perf_counter()
        if (wait := started - time.perf_counter()) > 0:
            await asyncio.sleep(wait)
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
    return ShareResult([client.parse(r) for r in raw], warmup, started, ended, cpu)


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
