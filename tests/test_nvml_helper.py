"""The one NVML helper (gpubench/measure/nvml.py) behind both samplers, against a stand-in nvidia-ml-py:
the GPUs CUDA_VISIBLE_DEVICES names, in its order, and the peak-memory sampler reading the first of them."""

from __future__ import annotations

import sys
import time

import fake_pynvml

from gpubench.measure.gpu_memory import GpuMemorySampler
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


def test_the_memory_sampler_keeps_the_peak_of_the_first_visible_gpu(monkeypatch):
    devices = gpus()
    nv = fake_pynvml.module(devices)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with GpuMemorySampler(interval_s=0.01) as sampler:
        devices[1].memory_used = 9 * 2**30
        time.sleep(0.1)
        devices[1].memory_used = 4 * 2**30
        devices[0].memory_used = 50 * 2**30  # not the GPU this process uses
        time.sleep(0.05)
    assert sampler.peak_bytes == 9 * 2**30 and sampler.samples >= 3 and nv.shutdowns == 1
