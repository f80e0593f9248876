"""A measured part of a setup, timed the same way in every workload.

`Timed` waits for the device before the clock starts and before it stops (a GPU runs what Python queued after
Python moved on), marks the part's phase on entering (`ctx.progress`: the worker's utilisation and energy sampler
starts its timed part at a phase in the workload's TIMED_PHASES, "timed" by default; it ends at the workload's next
phase or the setup's end), and keeps a loop going until both a minimum count of units and a minimum duration are
reached: a count alone is too short on a fast GPU, a duration alone too few units on a slow one.

    with timing.Timed(ctx, device, min_count=config.steps, min_seconds=config.min_seconds) as timed:
        while timed.more(done):
            ...; done += 1
    rate = done / timed.seconds

Parts of other shapes:
- `lap()`: waits for the device and returns the seconds since the previous lap (or the start): per-step times
  where each step is waited for anyway (DDP steps, decoder calls);
- `mark()` and `intervals_ms()`: timestamps queued on the device and not waited for (CUDA events on a GPU), so
  per-step times cost no wait per step; the part's own seconds are still wall time to the final wait;
- `device=None`: nothing to wait for: host work;
- `engine`: whose work the waits are for: torch's (the default), or an engine with CUDA streams of its own
  ("ctranslate2"), waited for through the CUDA driver (measure/device.py);
- `ctx=None`: no phase mark, for a part inside a phase its caller reports itself (per-iteration progress);
- `cold=True`: no wait on entering, for the device's first use: a wait would itself start the device (create
  the CUDA context) before the clock, which is what such a part times.
"""

from __future__ import annotations

import time

from gpubench.measure.device import ENGINES, TORCH, on_gpu, synchronize


class Timed:
    def __init__(self, ctx, device: str | None, *, min_count: int = 1, min_seconds: float = 0.0,
                 phase: str = "timed", total: int | None = None, message: str | None = None, cold: bool = False,
                 engine: str = TORCH, clock=time.perf_counter):
        if min_count < 0 or min_seconds < 0:
            raise ValueError(f"min_count {min_count} and min_seconds {min_seconds} must not be negative")
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        self.ctx, self.device, self.phase, self.engine = ctx, device, phase, engine
        self.min_count, self.min_seconds = min_count, min_seconds
        self.total, self.message, self.cold, self.clock = total, message, cold, clock
        self.on_gpu = device is not None and on_gpu(device)
        self.started: float | None = None
        self.seconds: float | None = None  # set on leaving: the part's wall time, device work included
        self._last_lap: float | None = None
        self._marks: list = []

    def __enter__(self) -> Timed:
        if not self.cold:
            self._wait()
        if self.ctx is not None:
            self.ctx.progress(self.phase, done=0 if self.total is not None else None, total=self.total,
                              message=self.message)
        self.started = self._last_lap = self.clock()
        return self

    def elapsed(self) -> float:
        return self.clock() - self.started

    def more(self, done: int) -> bool:
        """Whether the loop goes on after `done` units: until both minimums are met. The check does not wait
        for the device (a wait per unit would cost what it measures); the clock's stop does."""
        return done < self.min_count or self.elapsed() < self.min_seconds

    def lap(self) -> float:
        """Seconds since the previous lap (or the start), the device's queued work included."""
        self._wait()
        now = self.clock()
        seconds, self._last_lap = now - self._last_lap, now
        return seconds

    def mark(self) -> None:
        """A timestamp at this point of the device's queue, not waited for; `intervals_ms` reads them."""
        if self.on_gpu and self.engine == TORCH:
            import torch

            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._marks.append(event)
        else:
            self._marks.append(self.clock())

    def intervals_ms(self) -> list[float]:
        """Milliseconds between consecutive marks; after leaving, when the device has reached every mark."""
        if self.seconds is None:
            raise RuntimeError("intervals_ms() is read after the timed part, once the device has reached its marks")
        pairs = zip(self._marks, self._marks[1:], strict=False)
        if self.on_gpu and self.engine == TORCH:
            return [a.elapsed_time(b) for a, b in pairs]
        return [(b - a) * 1000 for a, b in pairs]

    def _wait(self) -> None:
        if self.device is not None:
            synchronize(self.device, self.engine)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._wait()
            self.seconds = self.elapsed()
