"""Timed(engine="ctranslate2"): an engine with CUDA streams of its own is waited for through the CUDA driver (the
device's primary context, every stream in it), never through torch; a CPU part waits for nothing."""

from __future__ import annotations

import ctypes

import pytest
from timing_fakes import Clock, Ctx, fake_torch

from gpubench.measure import device, timing


class FakeLibcuda:
    """libcuda.so.1 as synchronize_context calls it: each call logged with its GPU or context, return codes set."""

    def __init__(self, failing: str | None = None):
        self.calls, self.failing = [], failing

    def __getattr__(self, name):
        def call(*args):
            if name == "cuDeviceGet":
                args[0]._obj.value = args[1] + 10  # the device's handle
            elif name == "cuDevicePrimaryCtxRetain":
                args[0]._obj.value = 0xC0  # the primary context
            shown = [a.value if isinstance(a, ctypes.c_void_p | ctypes.c_int) else a for a in args
                     if not isinstance(a, type(ctypes.byref(ctypes.c_int())))]
            self.calls.append((name, *shown))
            return 999 if name == self.failing else 0
        return call


def test_the_primary_context_is_pushed_synchronized_popped_and_released():
    cuda = FakeLibcuda()
    device.synchronize_context(1, libcuda=cuda)
    assert cuda.calls == [("cuInit", 0), ("cuDeviceGet", 1), ("cuDevicePrimaryCtxRetain", 11),
                          ("cuCtxPushCurrent_v2", 0xC0), ("cuCtxSynchronize",), ("cuCtxPopCurrent_v2",),
                          ("cuDevicePrimaryCtxRelease_v2", 11)]


def test_a_failed_wait_names_the_call_and_still_gives_the_context_back():
    cuda = FakeLibcuda(failing="cuCtxSynchronize")
    with pytest.raises(device.DriverError, match="cuCtxSynchronize failed with CUDA driver error 999"):
        device.synchronize_context(0, libcuda=cuda)
    assert [c[0] for c in cuda.calls][-2:] == ["cuCtxPopCurrent_v2", "cuDevicePrimaryCtxRelease_v2"]


def test_timed_waits_through_the_driver_for_ctranslate2_and_not_through_torch(monkeypatch):
    clock, waits = Clock(), []
    torch_cuda = fake_torch(monkeypatch, clock)
    monkeypatch.setattr(device, "synchronize_context", lambda gpu: waits.append(gpu))
    with timing.Timed(Ctx(), "cuda:2", phase="load_model", cold=True, engine="ctranslate2", clock=clock) as load:
        assert waits == []  # cold: the load itself starts the device
        clock.t += 3.0
    assert waits == [2] and load.seconds == pytest.approx(3.0)
    with timing.Timed(Ctx(), "cuda", engine="ctranslate2", clock=clock):
        pass
    assert waits == [2, 0, 0] and torch_cuda.calls == []
    with timing.Timed(Ctx(), "cpu", engine="ctranslate2", clock=clock):
        pass
    assert waits == [2, 0, 0]  # nothing queued on a CPU


def test_an_unknown_engine_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown engine 'onnx': one of torch, ctranslate2"):
        timing.Timed(Ctx(), "cuda", engine="onnx")
