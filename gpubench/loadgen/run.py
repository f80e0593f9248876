"""Drive a load: warm-up, then the timed requests (closed loop of users, or Poisson arrivals).

`run_load` is synchronous (it runs its own event loop) and returns a LoadRun; it raises LoadFailed
when a warm-up request fails or the share of failed timed requests passes spec.max_error_rate.
Everything the records need is kept raw while the load runs and parsed after (client.py).
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from gpubench.loadgen import client, prompts
from gpubench.loadgen.client import RawResponse, RequestRecord
from gpubench.loadgen.http_client import Pool, Target
from gpubench.loadgen.metrics import summarize
from gpubench.loadgen.spec import LoadSpec

Progress = Callable[..., None]  # progress(phase, done=None, total=None, message=None), as SetupContext's


class LoadFailed(RuntimeError):
    """The load could not be measured as asked; str() is one line with the counts."""


@dataclass
class LoadRun:
    spec: LoadSpec
    records: list[RequestRecord]  # the timed requests, in the order they were built
    warmup: list[RequestRecord]
    duration_s: float  # first timed request sent -> last one finished
    client_cpu_s: float  # this process's CPU time over the timed phase

    @property
    def failed(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.ok]

    @property
    def errors(self) -> dict[str, int]:
        return dict(Counter(r.error_kind for r in self.failed).most_common())

    def metrics(self) -> dict[str, float]:
        return summarize(self.records, self.duration_s, self.client_cpu_s)

    def info(self) -> dict:
        """Facts for a result's `info`: errors by kind with an example each, and usage mismatches."""
        examples = {}
        for r in self.failed:
            examples.setdefault(r.error_kind, r.error)
        mismatches = [r for r in self.records if r.ok and r.usage_mismatch]
        return {
            "url": self.spec.url, "errors_by_kind": self.errors, "error_examples": examples,
            "usage_mismatch_example": mismatches[0].usage_mismatch if mismatches else None,
            "prompt_tokens_exact": all(r.prompt_tokens_sent is not None for r in self.records),
        }

    def check(self) -> None:
        failed, total = len(self.failed), len(self.records)
        if failed / total > self.spec.max_error_rate:
            kinds = ", ".join(f"{kind} x{n}" for kind, n in self.errors.items())
            example = self.failed[0].error or ""
            raise LoadFailed(f"{failed} of {total} requests failed ({failed / total:.1%} > the allowed"
                             f" {self.spec.max_error_rate:.1%}): {kinds}; first: {example}"[:500])


def run_load(spec: LoadSpec, progress: Progress | None = None, check: bool = True) -> LoadRun:
    """Send the spec's load and return what happened; with check, fail past the allowed error rate."""
    progress = progress or (lambda *args, **kwargs: None)
    warm_prompts = prompts.build(spec, spec.warmup, stream="warmup")
    timed_prompts = prompts.build(spec, spec.requests)
    run = asyncio.run(_drive(spec, warm_prompts, timed_prompts, progress))
    if check:
        run.check()
    return run


async def _drive(spec: LoadSpec, warm_prompts, timed_prompts, progress: Progress) -> LoadRun:
    target = Target.parse(spec.url)
    request_headers = client.headers()

    def prepared(prompt) -> tuple[bytes, int | None]:
        return target.request("POST", client.payload(spec, prompt), request_headers), prompt.tokens

    bodies = [prepared(p) for p in timed_prompts]
    warm_bodies = [prepared(p) for p in warm_prompts]
    pool = Pool(target)

    def send(index: int, body: tuple[bytes, int | None]):
        return client.send(pool, body[0], index, body[1], spec.timeout_s)

    try:
        warmup = []
        if warm_bodies:
            progress("warmup", 0, len(warm_bodies))
            raw = await _closed_loop(send, warm_bodies, min(spec.users or len(warm_bodies), len(warm_bodies)))
            warmup = [client.parse(r) for r in raw]
            if bad := [r for r in warmup if not r.ok]:
                raise LoadFailed(f"warm-up request failed ({len(bad)} of {len(warmup)}): {bad[0].error_kind}:"
                                 f" {bad[0].error}"[:500])
        ticker = _Ticker(progress, len(bodies))
        gc.collect()
        gc.freeze()  # what exists now is never collected again: fewer and shorter pauses while timing
        cpu, started = time.process_time(), time.perf_counter()
        if spec.rate is None:
            raw = await _closed_loop(send, bodies, spec.users, ticker.tick)
        else:
            raw = await _poisson(send, bodies, spec.rate, spec.users, spec.seed, ticker.tick)
        duration, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        gc.unfreeze()
        pool.close()
    return LoadRun(spec=spec, records=[client.parse(r) for r in raw], warmup=warmup, duration_s=duration,
                   client_cpu_s=cpu)


async def _closed_loop(send, bodies, users: int, done: Callable[[], None] = lambda: None) -> list[RawResponse]:
    """`users` users, each sending the next unsent request as soon as its previous one finished."""
    results: list[RawResponse | None] = [None] * len(bodies)
    pending = iter(range(len(bodies)))  # shared: each user takes the next index

    async def user() -> None:
        for index in pending:
            results[index] = await send(index, bodies[index])
            done()

    await asyncio.gather(*(user() for _ in range(min(users, len(bodies)))))
    return results


async def _poisson(send, bodies, rate: float, cap: int | None, seed: int,
                   done: Callable[[], None] = lambda: None) -> list[RawResponse]:
    """Requests arrive with exponential gaps of mean 1/rate (the first at once); `cap` bounds those in flight."""
    rng = random.Random(f"{seed}-arrivals")
    slots = asyncio.Semaphore(cap) if cap else None
    loop = asyncio.get_running_loop()

    async def one(index: int) -> RawResponse:
        if slots is None:
            result = await send(index, bodies[index])
        else:
            async with slots:
                result = await send(index, bodies[index])
        done()
        return result

    tasks = []
    start, arrival = loop.time(), 0.0
    for index in range(len(bodies)):
        delay = start + arrival - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(index)))
        arrival += rng.expovariate(rate)
    return list(await asyncio.gather(*tasks))


class _Ticker:
    """Progress at most ten times a run: each report is a line written while streams are open."""

    def __init__(self, progress: Progress, total: int):
        self.progress, self.total, self.done = progress, total, 0
        self.every = max(1, total // 10)

    def tick(self) -> None:
        self.done += 1
        if self.done % self.every == 0 or self.done == self.total:
            self.progress("timed", self.done, self.total)
