"""The one NVML helper (gpubench/measure/nvml.py) behind the worker's one NVML sampler, against a stand-in
nvidia-ml-py: the GPUs CUDA_VISIBLE_DEVICES names, in its order, each reading with its used memory (NVML's peak
memory is a figure of these readings: tests/test_memory_tracker.py)."""

from __future__ import annotations

import sys

import fake_pynvml

from gpubench.measure.nvml import Nvml, open_nvml


def gpus():
    return [fake_pynvml.FakeGpu(watts=100 * (i + 1), memory_used=(i + 1) * 2**30) for i in range(3)]


def test_the_visible_gpus_in_cuda_order(monkeypatch):
    devices = gpus()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.module(devices))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,GPU-fake-0")
    nvml = Nvml()
    assert nvml.handles == [devices[2], devices[0]]
    assert [r.power_w for r in nvml.read()] == [300.0, 100.0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert open_nvml() == (None, "no GPU visible")


def test_a_reading_has_each_gpus_used_memory(monkeypatch):
    devices = gpus()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.module(devices))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    devices[1].memory_used = 9 * 2**30
    assert [r.memory_used_bytes for r in Nvml().read()] == [9 * 2**30, 2**30]
