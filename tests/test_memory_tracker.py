"""The harness's one memory tracker (gpubench/measure/gpu_memory.MemoryTracker, `ctx.memory`): torch's allocator
peak since the workload's reset, NVML's used memory from the worker's one NVML sampler (no second thread reads the
GPUs), the host's peak RSS on a CPU, and a reason where NVML gave no readings."""

from __future__ import annotations

import io
import sys
import time
import types

import fake_pynvml
import pytest

from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.measure import gpu_memory
from gpubench.measure.nvml import Nvml
from gpubench.run import utilisation, worker
from gpubench.schema import PEAK_MEMORY, SetupResult, parse_record

GIB = 2**30


def test_on_a_cpu_the_peak_is_the_processes_rss():
    info = {}
    tracker = gpu_memory.MemoryTracker(info)
    tracker.reset("cpu")  # nothing to reset: the RSS peak is the process's
    peak = tracker.peak("cpu")
    assert peak[PEAK_MEMORY] == pytest.approx(gpu_memory.peak_rss_bytes() / GIB) and peak[PEAK_MEMORY] > 0.01
    assert info["peak_mem"] == gpu_memory.HOST_RSS
    assert tracker.peak_bytes("cpu") is None


def fake_torch(monkeypatch) -> types.SimpleNamespace:
    """A `torch` whose CUDA allocator keeps a peak per device, as torch.cuda's statistics do."""
    state = types.SimpleNamespace(peaks={"cuda": 7 * GIB, "cuda:1": 9 * GIB}, resets=[])

    def reset(device):
        state.resets.append(device)
        state.peaks[device] = 2 * GIB

    cuda = types.SimpleNamespace(is_initialized=lambda: True, reset_peak_memory_stats=reset,
                                 max_memory_allocated=lambda device: state.peaks[device])
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return state


def test_on_a_gpu_the_peak_is_torchs_allocation_since_the_reset(monkeypatch):
    state = fake_torch(monkeypatch)
    info = {}
    tracker = gpu_memory.MemoryTracker(info)
    assert tracker.peak("cuda") == {PEAK_MEMORY: 7.0}  # no reset: since the process started
    tracker.reset("cuda:1")
    assert state.resets == ["cuda:1"]
    assert tracker.peak("cuda:1") == {PEAK_MEMORY: 2.0} and info["peak_mem"] == gpu_memory.TORCH_ALLOCATED
    assert tracker.peak_bytes("cuda") == 7 * GIB


def sampler_over(monkeypatch, gpus, visible: str | None = None) -> tuple[utilisation.Sampler, object]:
    nv = fake_pynvml.module(gpus)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    if visible is not None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    return utilisation.Sampler(Nvml(), interval=0.01), nv


def test_nvmls_peak_is_read_from_the_one_sampler_over_the_part_since_the_reset(monkeypatch):
    devices = [fake_pynvml.FakeGpu(watts=100, memory_used=(i + 1) * GIB) for i in range(3)]
    sampler, _ = sampler_over(monkeypatch, devices, visible="1,2")
    info = {}
    tracker = gpu_memory.MemoryTracker(info, sampler)
    sampler.start()
    try:
        devices[1].memory_used = 30 * GIB  # before the part: not its peak
        time.sleep(0.05)
        devices[1].memory_used = 5 * GIB
        tracker.reset("cuda")
        devices[1].memory_used = 9 * GIB
        time.sleep(0.05)
        devices[2].memory_used = 50 * GIB  # another visible GPU: not the one the setup used
        devices[1].memory_used = 6 * GIB  # the last moment is read on the spot
        peak = tracker.peak("cuda", gpu_memory.NVML_USED)
        devices[2].memory_used = 40 * GIB
        other = tracker.peak_bytes("cuda:1", gpu_memory.NVML_USED)
    finally:
        sampler.stop()
    assert peak == {PEAK_MEMORY: 9.0} and info["peak_mem"] == gpu_memory.NVML_USED
    assert other == 50 * GIB


def test_without_readings_nvmls_peak_is_no_figure_and_says_why():
    info = {}
    tracker = gpu_memory.MemoryTracker(info, None, "not sampled (GPUBENCH_UTILISATION=off)")
    assert tracker.peak("cuda", gpu_memory.NVML_USED) == {}
    assert info["peak_mem"] == "not measured: no NVML readings (not sampled (GPUBENCH_UTILISATION=off))"


PROBE = '''
import time
from gpubench.measure.gpu_memory import NVML_USED
from gpubench.workload import MetricDef
from dataclasses import dataclass

@dataclass
class Config:
    pass

SMOKE = {}
METRICS = {"done": MetricDef("units", "higher")}
GPUS, NVML = [], []  # the fake GPUs and pynvml, set by the test

def run_setup(setup, config, ctx):
    import threading

    ctx.memory.reset("cuda")
    NVML[0].reading_threads.clear()
    GPUS[0].memory_used = 11 * 2**30
    time.sleep(0.1)  # two readings of the sampler at least
    ctx.info["readers"] = len(NVML[0].reading_threads - {threading.get_ident()})
    GPUS[0].memory_used = 3 * 2**30
    ctx.progress("timed")
    time.sleep(0.05)
    metrics = ctx.memory.peak("cuda", NVML_USED)
    metrics["done"] = 1.0
    return metrics
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "memory_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("memory_probe", None)
    import memory_probe

    spec = WorkloadSpec(name="memory-probe", title="t", study="t", setups=("a", "b"), gpus="none", gpu_count=0,
                        min_gpu_memory_gb=0, expected_minutes=1, dependencies={}, module="memory_probe")
    monkeypatch.setitem(WORKLOADS._items, spec.name, spec)
    yield memory_probe
    sys.modules.pop("memory_probe", None)


def test_a_workers_nvml_figures_come_from_its_one_sampler_thread(monkeypatch, probe):
    gpu = fake_pynvml.FakeGpu(watts=300, memory_used=GIB)
    probe.GPUS.append(gpu)
    nv = fake_pynvml.module([gpu])
    probe.NVML.append(nv)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.delenv(utilisation.OFF_VARIABLE, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    out = io.StringIO()
    job = {"workload": "memory-probe", "setups": ["a", "b"], "repeat": 1, "run_id": "r", "smoke": True,
           "weights": "random", "config": {}}
    worker.Worker(job, out).run_group()
    results = [r for r in map(parse_record, out.getvalue().splitlines()) if isinstance(r, SetupResult)]
    assert [r.status for r in results] == ["ok", "ok"], [r.error for r in results]
    for result in results:
        assert result.metrics[PEAK_MEMORY].value == 11.0 and result.info["peak_mem"] == gpu_memory.NVML_USED
        assert result.metrics["gpu_busy_pct"].value == 100.0  # the utilisation of the same readings
        assert result.info["readers"] == 1  # besides the setup's own on-the-spot readings: one sampler thread
    assert nv.inits == 1  # NVML opened once for the worker
