"""Timed.mark() and intervals_ms(): per-step times without a wait per step. On a GPU each mark is a CUDA event
queued behind the work before it, never waited for; the intervals are read after the part, once the device
has reached them. On a CPU a mark is the clock."""

from __future__ import annotations

import pytest
from timing_fakes import Clock, Ctx, fake_torch

from gpubench.measure import timing


def marked(device, clock, steps):
    with timing.Timed(Ctx(), device, clock=clock) as timed:
        timed.mark()
        for step_s in steps:
            clock.t += step_s
            timed.mark()
        with pytest.raises(RuntimeError):
            timed.intervals_ms()  # the device may not have reached the marks yet
    return timed


def test_gpu_marks_are_events_the_part_does_not_wait_for(monkeypatch):
    clock = Clock()
    cuda = fake_torch(monkeypatch, clock)
    timed = marked("cuda:0", clock, (0.25, 0.5))
    assert cuda.calls == ["synchronize", "record", "record", "record", "synchronize"]  # waits on entering and leaving
    assert timed.intervals_ms() == pytest.approx([250, 500])


def test_cpu_marks_read_the_clock():
    timed = marked("cpu", Clock(), (0.125, 0.375))
    assert timed.intervals_ms() == pytest.approx([125, 375])
    assert timed.seconds == pytest.approx(0.5)
