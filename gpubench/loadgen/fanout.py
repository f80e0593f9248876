"""A load split over several client processes, so that no single event loop (and GIL) reads every stream.

Each process is started with the whole plan (prompts are built once, here) and its share number; it runs
its warm-up, says it is ready, and waits for one start time that the parent sends once all are ready.
Closed-loop users in every process take the next request index from one shared counter, exactly as the
users of one process take it from one iterator; open-loop arrivals are dealt round-robin. Each process
names itself `gpubench-client` (its /proc comm), so a utilisation sample can tell it from a server's
processes, and measures its own CPU time over the timed phase. Spawned, not forked: the worker that calls
this has threads (the utilisation sampler), and a forked child would inherit their locks mid-use.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from multiprocessing.connection import wait

from gpubench.loadgen.share import START_LEAD_S, LoadFailed, Plan, ShareResult, Ticker, drive_share, name_process

POLL_S = 0.5


class SharedCounter:
    """A counter every client process increments under one lock."""

    def __init__(self, value) -> None:
        self.value = value

    def take(self) -> int:
        with self.value.get_lock():
            index = self.value.value
            self.value.value = index + 1
        return index


def run_shares(load: Plan, processes: int, progress, on_timed=lambda: None) -> list[ShareResult]:
    """Run the plan's load from `processes` client processes; their results in share order. on_timed runs when
    every process is warm, before the start time is set."""
    ctx = multiprocessing.get_context("spawn")
    counter, done = ctx.Value("q", 0), ctx.Value("q", 0)
    pipes, workers = [], []
    progress("warmup", 0, len(load.warm_bodies), f"{processes} client processes")
    try:
        for share in range(processes):
            parent, child = ctx.Pipe()
            worker = ctx.Process(target=_client, args=(load, share, processes, counter, done, child),
                                 name=f"gpubench-client-{share}", daemon=True)
            worker.start()
            child.close()
            pipes.append(parent)
            workers.append(worker)
        for pipe in pipes:
            _expect(pipe, "ready")
        on_timed()
        progress("timed", 0, len(load.bodies))
        start = time.perf_counter() + START_LEAD_S
        for pipe in pipes:
            pipe.send(("start", start))
        ticker, results = Ticker(progress, len(load.bodies)), {}
        while len(results) < processes:
            for pipe in wait([p for i, p in enumerate(pipes) if i not in results], timeout=POLL_S):
                results[pipes.index(pipe)] = _expect(pipe, "done")
            ticker.tick(done.value - ticker.done)
        return [results[i] for i in range(processes)]
    except BaseException:
        for worker in workers:
            worker.terminate()
        raise
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5)


def _expect(pipe, kind: str):
    try:
        got, value = pipe.recv()
    except EOFError:
        raise LoadFailed("a client process exited without a result (killed, or out of memory?)") from None
    if got == "error":
        raise LoadFailed(value)
    if got != kind:
        raise LoadFailed(f"client process: expected {kind!r}, got {got!r}")
    return value


def _client(load: Plan, share: int, shares: int, counter, done, pipe) -> None:
    name_process()

    async def start_at() -> float:
        pipe.send(("ready", None))
        # waited for in a thread, so the event loop goes on: a connection the server closes meanwhile is seen closed
        return await asyncio.to_thread(_expect, pipe, "start")

    def finished() -> None:
        with done.get_lock():
            done.value += 1

    try:
        result = asyncio.run(drive_share(load, share, shares, SharedCounter(counter), finished, time.process_time,
                                         start_at))
    except LoadFailed as exc:
        pipe.send(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line, not a traceback on stderr
        pipe.send(("error", f"client process {share}: {type(exc).__name__}: {exc}"[:500]))
    else:
        pipe.send(("done", result))
