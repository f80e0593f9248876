"""Energy over the timed part (gpubench/measure/energy.py), read through the one NVML helper
(gpubench/measure/nvml.py) from a stand-in nvidia-ml-py (tests/fake_pynvml.py) put where `import pynvml` finds it:
the counter, the integral of sampled power where the counter is missing, the GPUs a setup used summed, and a
CPU run without a figure but with its reason. Joules per unit of the study's basis come from the runner."""

from __future__ import annotations

import io
import sys

import fake_pynvml
import pytest
import worker_probe_workload as probe

from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.measure import energy
from gpubench.measure.nvml import Nvml
from gpubench.run import runner, utilisation, worker
from gpubench.schema import Metric, SetupResult, parse_record, to_line

STEP = 0.05  # the sampler's interval


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def sampled(monkeypatch, gpus, timed=(0.0, 2.0), until=2.5, gpus_used=1, counter_every=1):
    """Readings every STEP from 0 to `until` s through Nvml over the fake GPUs, the part `timed` marked timed
    (its first and last readings as the sampler takes them), summarised as the worker does; the energy counter in
    every `counter_every`-th reading and at the part's ends."""
    clock = Clock()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.module(gpus, clock))
    nvml = Nvml()
    samples = []
    steps = round(until / STEP)
    for i in range(steps + 1):
        clock.t = i * STEP
        inside = timed[0] <= clock.t + 1e-9 and clock.t <= timed[1] + 1e-9
        leaving = abs(clock.t - timed[1]) < 1e-9
        counter = i % counter_every == 0 or leaving or abs(clock.t - timed[0]) < 1e-9
        samples.append(utilisation.Sample(t=clock.t, timed=inside, gpus=nvml.read(counter=counter), threads={},
                                          leaving=leaving))
    return utilisation.summarise(samples, cores=2, gpus_used=gpus_used)


def test_the_counter_gives_the_energy_of_the_timed_part_only(monkeypatch):
    # 400 W for real; the counter has counted since the driver loaded (a large offset); the power readings are
    # 10% low, so a figure from them would show
    gpu = fake_pynvml.FakeGpu(watts=400, counter_offset_mj=8_123_456_789, instant_scale=0.9)
    figures = sampled(monkeypatch, [gpu], timed=(0.5, 2.0))
    assert figures.energy.source == energy.COUNTER
    assert figures.metrics["energy_j"] == pytest.approx(600.0, rel=1e-6)  # 1.5 s at 400 W, not the 2.5 s sampled
    assert figures.metrics["avg_power_w"] == pytest.approx(400.0, rel=1e-6)
    assert figures.energy.seconds == pytest.approx(1.5)
    assert figures.energy.power_integral_j == pytest.approx(540.0, rel=1e-6)  # the check, from the low readings


def test_a_counter_read_once_a_second_spans_the_readings_between(monkeypatch):
    # as the sampler reads it: every 20th reading (1 s) and at the timed part's ends (0.5 s and 2.0 s)
    gpu = fake_pynvml.FakeGpu(watts=400, counter_offset_mj=8_123_456_789, instant_scale=0.9)
    figures = sampled(monkeypatch, [gpu], timed=(0.5, 2.0), counter_every=20)
    assert figures.energy.source == energy.COUNTER  # not one interval from the (10% low) power readings
    assert figures.metrics["energy_j"] == pytest.approx(600.0, rel=1e-6)
    assert figures.energy.power_integral_j == pytest.approx(540.0, rel=1e-6)


def test_a_counter_that_wraps_between_two_of_its_readings_costs_the_intervals_between_them(monkeypatch):
    # read at 0, 1 and 2 s; it restarts from 0 between 1.00 and 1.05 s, so 2 s reads below 1 s: 1-2 s is integrated
    gpu = fake_pynvml.FakeGpu(watts=400, counter_wraps_at_mj=410_000, instant_scale=0.9)
    figures = sampled(monkeypatch, [gpu], counter_every=20)
    assert figures.metrics["energy_j"] == pytest.approx(400.0 + 360.0, rel=1e-6)
    assert figures.energy.source.startswith(f"{energy.COUNTER} over 50% of the time")


def test_a_counter_that_starts_answering_mid_run_is_joined_by_the_power_integral_before_it(monkeypatch):
    gpu = fake_pynvml.FakeGpu(watts=400, counter_from_s=1.0, counter_offset_mj=10**9, instant_scale=0.9)
    figures = sampled(monkeypatch, [gpu])
    # 0-1 s: the instantaneous power (360 W as read) integrated; 1-2 s: the counter (400 J)
    assert figures.metrics["energy_j"] == pytest.approx(360.0 + 400.0, rel=1e-6)
    assert figures.energy.source.startswith(f"{energy.COUNTER} over 50% of the time")
    assert "integral of sampled power (instant power)" in figures.energy.source


def test_a_counter_that_wraps_costs_only_the_interval_across_the_wrap(monkeypatch):
    # the counter restarts from 0 between 1.00 and 1.05 s: 400 W x 1.025 s is 410,000 mJ
    gpu = fake_pynvml.FakeGpu(watts=400, counter_wraps_at_mj=410_000, instant_scale=0.9)
    figures = sampled(monkeypatch, [gpu])
    # 39 intervals from the counter (400 W) and the one across the wrap from the power readings (360 W)
    assert figures.metrics["energy_j"] == pytest.approx(400.0 * 1.95 + 360.0 * STEP, rel=1e-6)
    assert "over 98% of the time" in figures.energy.source


def test_a_gpu_without_the_counter_is_the_integral_of_its_instantaneous_power(monkeypatch):
    gpu = fake_pynvml.FakeGpu(watts=500, counter_from_s=None, instant_scale=1.0, average_scale=0.8)
    figures = sampled(monkeypatch, [gpu])
    assert figures.metrics["energy_j"] == pytest.approx(1000.0, rel=1e-6)  # the instant field, not the average
    assert figures.energy.source == f"{energy.INTEGRAL} (instant power)"
    # no instantaneous field either: the averaged reading, and the source says so
    figures = sampled(monkeypatch, [fake_pynvml.FakeGpu(watts=500, counter_from_s=None, instant=False,
                                                        average_scale=0.8)])
    assert figures.metrics["energy_j"] == pytest.approx(800.0, rel=1e-6)
    assert figures.energy.source == f"{energy.INTEGRAL} (average power)"


def test_the_gpus_a_setup_used_are_summed_and_an_idle_one_left_out(monkeypatch):
    gpus = [fake_pynvml.FakeGpu(watts=300, busy=97), fake_pynvml.FakeGpu(watts=70, busy=0),
            fake_pynvml.FakeGpu(watts=500, busy=99)]
    two = sampled(monkeypatch, gpus, gpus_used=2)  # two ranks: GPUs 0 and 2, busy; GPU 1 idles at 70 W
    assert two.energy.gpus == [0, 2]
    assert two.metrics["energy_j"] == pytest.approx((300 + 500) * 2.0, rel=1e-6)
    assert two.metrics["avg_power_w"] == pytest.approx(800.0, rel=1e-6)
    one = sampled(monkeypatch, gpus, gpus_used=1)
    assert one.energy.gpus == [2] and one.metrics["energy_j"] == pytest.approx(1000.0, rel=1e-6)


def test_neither_source_means_no_figure_and_the_reason(monkeypatch):
    gpu = fake_pynvml.FakeGpu(watts=300, counter_from_s=None, instant=False)
    monkeypatch.setattr(fake_pynvml.FakeGpu, "average_scale", 1.0)
    clock = Clock()
    nv = fake_pynvml.module([gpu], clock)
    nv.nvmlDeviceGetPowerUsage = lambda g: (_ for _ in ()).throw(fake_pynvml.NVMLError())
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    nvml = Nvml()
    samples = []
    for i in range(30):
        clock.t = i * STEP
        samples.append(utilisation.Sample(t=clock.t, timed=True, gpus=nvml.read(), threads={}))
    figures = utilisation.summarise(samples, cores=2)
    assert "energy_j" not in figures.metrics and "avg_power_w" not in figures.metrics
    assert "reported neither its energy counter nor its power" in figures.energy.absent


SPEC = WorkloadSpec(name="energy-probe", title="t", study="t", setups=tuple(probe.SETUPS), gpus="none",
                    gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={},
                    module="worker_probe_workload",
                    energy=WORKLOADS.get("sdxl").energy)


@pytest.fixture
def registered():
    WORKLOADS._items[SPEC.name] = SPEC
    yield
    del WORKLOADS._items[SPEC.name]


def worker_result(**config) -> SetupResult:
    out = io.StringIO()
    job = {"workload": SPEC.name, "setups": ["first"], "repeat": 1, "run_id": "rid", "smoke": True,
           "weights": "random", "weight_paths": {}, "config": config}
    worker.Worker(job, out).run_group()
    [result] = [r for r in map(parse_record, out.getvalue().splitlines()) if isinstance(r, SetupResult)]
    return parse_record(to_line(result))  # as a reader of results.jsonl sees it


def test_a_worker_on_a_gpu_reports_the_energy_of_its_timed_part(registered, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # no torch: the device is not the CPU's
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.module([fake_pynvml.FakeGpu(watts=250)]))
    result = worker_result(sleep_s=0.5)
    assert result.energy.source == energy.COUNTER and result.energy.gpus == [0]
    assert 0.5 <= result.energy.seconds < 3
    assert result.metrics["avg_power_w"].value == pytest.approx(250.0, rel=0.02)
    assert result.metrics["energy_j"].value == pytest.approx(250.0 * result.energy.seconds, rel=0.02)
    assert result.metrics["energy_j"].unit == "J" and result.metrics["energy_j"].better == "lower"


def test_a_cpu_run_has_no_energy_figure_and_says_why(registered, monkeypatch):
    pytest.importorskip("torch")  # loaded: the worker reads the device from torch, which sees no GPU here
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.module([fake_pynvml.FakeGpu(watts=250)]))
    result = worker_result()
    assert result.device == "cpu"
    assert result.energy.absent == "ran on the CPU (cpu): no GPU energy" and result.energy.source is None
    assert "energy_j" not in result.metrics and "avg_power_w" not in result.metrics


def test_without_nvml_the_reason_names_it(registered, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    result = worker_result()
    assert result.energy.absent.startswith("no GPU readings (NVML: ModuleNotFoundError")
    assert "energy_j" not in result.metrics
    monkeypatch.setenv(utilisation.OFF_VARIABLE, "off")
    assert worker_result().energy.absent == f"not sampled ({utilisation.OFF_VARIABLE}=off)"


def test_joules_per_unit_of_the_studys_energy_basis():
    def metrics(**values):
        return {name: Metric(value=v, unit="u") for name, v in values.items()}

    sdxl = runner.energy_metrics(WORKLOADS.get("sdxl"), metrics(images_per_s=0.8, avg_power_w=660.0))
    assert {k: (round(m.value, 6), m.unit, m.better) for k, m in sdxl.items()} == {
        "j_per_image": (825.0, "J/image", "lower")}
    tc = runner.energy_metrics(WORKLOADS.get("train-compile"), metrics(tokens_per_s=100_000.0, avg_power_w=680.0))
    assert tc["j_per_1M_training_tokens"].value == pytest.approx(6800.0)
    whisper = runner.energy_metrics(WORKLOADS.get("whisper"), metrics(realtime_factor=120.0, avg_power_w=300.0))
    assert whisper["j_per_audio_hour"].value == pytest.approx(300.0 * 3600 / 120)
    cold = runner.energy_metrics(WORKLOADS.get("cold-start"), metrics(total_s=20.0, avg_power_w=150.0))
    assert cold["j_per_start"].value == pytest.approx(3000.0)
    assert runner.energy_metrics(WORKLOADS.get("sdxl"), metrics(images_per_s=0.8)) == {}  # no energy: none per unit


def test_a_result_stored_before_energy_still_parses():
    old = ('{"schema_version":"1.1","run_id":"r","ts":"2026-12-01T00:00:00.000000Z","kind":"result","setup":"a",'
           '"repeat":1,"status":"ok","metrics":{"x":{"value":1.0,"unit":"u","better":null}},"error":null,'
           '"device":"cuda:0 NVIDIA H200","duration_s":1.0,"info":{}}')
    result = parse_record(old)
    assert isinstance(result, SetupResult) and result.energy is None


def test_summary_names_each_setups_energy_source_and_a_cpu_run_says_why_once():
    from gpubench.results import summary
    from gpubench.schema import EnergyFacts

    def ok(setup, **facts):
        return SetupResult(run_id="r", setup=setup, repeat=1, status="ok", energy=EnergyFacts(**facts))

    gpu = [ok("a", source=energy.COUNTER), ok("b", source=f"{energy.INTEGRAL} (instant power)"),
           ok("c", source=f"{energy.COUNTER} over 40% of the time, {energy.INTEGRAL} (instant power) over the rest"),
           SetupResult(run_id="r", setup="d", repeat=1, status="error", error="boom")]
    assert summary.energy_per_setup(gpu) == {"a": "NVML counter", "b": "power integral",
                                             "c": "counter + power integral"}
    assert summary.energy_note(summary.energy_per_setup(gpu)) is None  # measured: a column, not a note
    cpu = [ok(s, absent="ran on the CPU (cpu): no GPU energy") for s in ("a", "b")]
    assert summary.energy_note(summary.energy_per_setup(cpu)) == (
        "energy not measured: ran on the CPU (cpu): no GPU energy")
