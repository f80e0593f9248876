"""Timed(cold=True): a part that is the device's first use (first-matmul's CUDA context and first matmul) starts
its clock without a wait, since a wait would start the device before the clock; it still waits before stopping."""

from __future__ import annotations

from timing_fakes import Clock, Ctx, fake_torch

from gpubench.measure import timing


def test_a_cold_part_does_not_wait_before_its_clock_starts(monkeypatch):
    clock = Clock()
    cuda = fake_torch(monkeypatch, clock)
    with timing.Timed(Ctx(), "cuda", cold=True, clock=clock):
        assert cuda.calls == []
        clock.t += 2.0
    assert cuda.calls == ["synchronize"]
    with timing.Timed(Ctx(), "cuda", clock=clock):
        assert cuda.calls == ["synchronize"] * 2  # a warm part waits for the work queued before it
