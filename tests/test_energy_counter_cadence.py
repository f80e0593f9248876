"""The sampler reads NVML's total-energy counter about once a second and at each end of a timed part, not in every
reading: one call of it took 2.8-3.1 ms on the H200 against 1-9 µs for each other call of a reading
(benchmarks/results/h200-2026-12-04). The energy between is the counter's difference (tests/test_energy.py)."""

from __future__ import annotations

import sys
import time

import fake_pynvml

from gpubench.measure.nvml import Nvml
from gpubench.run import utilisation


def test_the_counter_is_read_at_the_parts_ends_and_once_a_second_between(monkeypatch):
    nv = fake_pynvml.module([fake_pynvml.FakeGpu(watts=300)])
    counted = nv.nvmlDeviceGetTotalEnergyConsumption
    calls = []
    nv.nvmlDeviceGetTotalEnergyConsumption = lambda gpu: calls.append(time.monotonic()) or counted(gpu)
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    sampler = utilisation.Sampler(Nvml(), interval=0.01).start()
    sampler.mark(True)
    started = time.monotonic()
    while len(sampler.samples) < 30 or time.monotonic() - started < 0.3:
        time.sleep(0.01)
    sampler.mark(False)
    figures = sampler.stop()
    timed = [s for s in sampler.samples if s.timed]
    assert timed[0].gpus[0].energy_mj is not None and timed[-1].gpus[0].energy_mj is not None  # both ends
    seconds = sampler.samples[-1].t - sampler.samples[0].t
    # the thread's first reading, entering, leaving, and one a second between
    assert len(calls) <= 3 + seconds / utilisation.COUNTER_S + 1 < len(sampler.samples) / 5
    assert figures.energy.source == "NVML total-energy counter"
