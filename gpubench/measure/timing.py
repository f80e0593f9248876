"""The timed part of a setup, the same way in every workload that adopts it.

`Timed` waits for the device before the clock starts and before it stops (a GPU runs what Python queued after
Python moved on), marks the timed phase on entering (`ctx.progress`: the worker's utilisation and energy sampler
starts its timed part there; it ends at the workload's next phase or the setup's end), and keeps a loop going
until both a minimum count of units and a minimum duration are reached: a count alone is too short on a fast
GPU, a duration alone too few units on a slow one.

    with timing.Timed(ctx, device, min_count=config.steps, min_seconds=config.min_seconds) as timed:
        while timed.more(done):
            ...; done += 1
    rate = done / timed.seconds
"""

from __future__ import annotations

import time

from gpubench.measure.device import synchronize


class Timed:
    def __init__(self, ctx, device: str, *, min_count: int = 1, min_seconds: float = 0.0, phase: str = "timed",
                 total: int | None = None, message: str | None = None, clock=time.perf_counter):
        if min_count < 0 or min_seconds < 0:
            raise ValueError(f"min_count {min_count} and min_seconds {min_seconds} must not be negative")
        self.ctx, self.device, self.phase = ctx, device, phase
        self.min_count, self.min_seconds = min_count, min_seconds
        self.total, self.message, self.clock = total, message, clock
        self.started: float | None = None
        self.seconds: float | None = None  # set on leaving: the part's wall time, device work included

    def __enter__(self) -> Timed:
        synchronize(self.device)
        self.ctx.progress(self.phase, done=0, total=self.total, message=self.message)
        self.started = self.clock()
        return self

    def elapsed(self) -> float:
        return self.clock() - self.started

    def more(self, done: int) -> bool:
        """Whether the loop goes on after `done` units: until both minimums are met. The check does not wait
        for the device (a wait per unit would cost what it measures); the clock's stop does."""
        return done < self.min_count or self.elapsed() < self.min_seconds

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            synchronize(self.device)
            self.seconds = self.elapsed()
