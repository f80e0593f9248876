"""Stand-ins the timing tests share: a context that records its progress marks, a clock moved by hand, and a
torch whose CUDA calls are recorded (so the GPU paths of measure/timing.py run on a machine without one)."""

from __future__ import annotations

import sys
import types


class Ctx:
    def __init__(self):
        self.phases = []

    def progress(self, phase, done=None, total=None, message=None):
        self.phases.append((phase, done, total, message))


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class FakeCuda:
    """torch.cuda as far as timing uses it: synchronize() and timing events, both logged in `calls`."""

    def __init__(self, clock: Clock):
        self.calls, self.clock = [], clock
        cuda = self

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.at = None

            def record(self):
                cuda.calls.append("record")
                self.at = cuda.clock.t  # the device's time when it reaches the event

            def elapsed_time(self, end):
                return (end.at - self.at) * 1000

        self.Event = Event

    def synchronize(self):
        self.calls.append("synchronize")


def fake_torch(monkeypatch, clock: Clock) -> FakeCuda:
    cuda = FakeCuda(clock)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return cuda
