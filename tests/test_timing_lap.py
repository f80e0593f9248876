"""Timed.lap(): per-step times of a part whose steps are each waited for (DDP steps, decoder calls): each lap
waits for the device, then returns the seconds since the previous lap, and the laps add up to the part."""

from __future__ import annotations

import pytest
from timing_fakes import Clock, Ctx, fake_torch

from gpubench.measure import timing


def test_each_lap_waits_for_the_device_and_counts_from_the_previous_one(monkeypatch):
    clock = Clock()
    cuda = fake_torch(monkeypatch, clock)
    laps = []
    with timing.Timed(Ctx(), "cuda", clock=clock) as timed:
        for step_s in (0.5, 0.25, 1.0):
            clock.t += step_s
            cuda.calls.clear()
            laps.append(timed.lap())
            assert cuda.calls == ["synchronize"]  # before the clock is read
    assert laps == [0.5, 0.25, 1.0]
    assert sum(laps) == pytest.approx(timed.seconds)
