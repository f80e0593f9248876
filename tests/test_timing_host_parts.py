"""Timed(device=None) waits for no device (host work, or CTranslate2, which returns when its work is done: a torch
wait would open a CUDA context in the process); Timed(ctx=None) marks no phase (its caller reports its own), and a
part without a total marks its phase with no count, as a plain ctx.progress(phase) does."""

from __future__ import annotations

import pytest
from timing_fakes import Clock, Ctx, fake_torch

from gpubench.measure import timing


def test_no_device_no_wait_and_no_ctx_no_mark(monkeypatch):
    clock = Clock()
    cuda = fake_torch(monkeypatch, clock)
    with timing.Timed(None, None, clock=clock) as timed:
        clock.t += 1.5
        assert timed.lap() == pytest.approx(1.5)
    assert timed.seconds == pytest.approx(1.5) and cuda.calls == []


def test_a_part_without_a_total_marks_no_count():
    ctx = Ctx()
    with timing.Timed(ctx, None, phase="load", message="from disk"):
        pass
    assert ctx.phases == [("load", None, None, "from disk")]
