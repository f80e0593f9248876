"""The timed-region helper (gpubench/measure/timing.py) and the one device resolution (measure/device.py): a
loop runs until both its minimum count and its minimum duration are met, the phase is marked for the sampler,
the part's seconds are read after the device's queued work; "auto" is the CPU where torch sees no GPU."""

from __future__ import annotations

import pytest
from timing_fakes import Clock, Ctx

from gpubench.measure import device, timing


def loop(min_count, min_seconds, step_s):
    ctx, clock = Ctx(), Clock()
    done = 0
    with timing.Timed(ctx, "cpu", min_count=min_count, min_seconds=min_seconds, total=min_count, message="m",
                      clock=clock) as timed:
        while timed.more(done):
            clock.t += step_s
            done += 1
    return done, timed, ctx


def test_both_minimums_hold():
    done, timed, ctx = loop(min_count=5, min_seconds=1.0, step_s=0.125)
    assert done == 8 and timed.seconds == pytest.approx(1.0)  # the duration was the longer minimum
    done, timed, _ = loop(min_count=5, min_seconds=1.0, step_s=0.5)
    assert done == 5 and timed.seconds == pytest.approx(2.5)  # the count was
    assert ctx.phases == [("timed", 0, 5, "m")]  # marked once, on entering: the sampler's timed part


def test_a_failed_part_has_no_seconds_and_bad_minimums_are_refused():
    ctx = Ctx()
    with pytest.raises(RuntimeError), timing.Timed(ctx, "cpu") as timed:
        raise RuntimeError("boom")
    assert timed.seconds is None
    with pytest.raises(ValueError):
        timing.Timed(ctx, "cpu", min_count=-1)


def test_auto_is_the_cpu_where_torch_sees_no_gpu():
    torch = pytest.importorskip("torch")
    assert device.resolve("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert device.resolve("cuda:1") == "cuda:1" and device.resolve("cpu", indexed=True) == "cpu"
    assert device.on_gpu("cuda:0") and not device.on_gpu("cpu")
    device.synchronize("cpu")  # nothing to wait for
