"""The facts the harness records on every result, through a real worker and the runner: the device the config
named, resolved; the dtype (the config's, or the one the setup said it computed in); what the utilisation sampler
covered. No workload writes them, and none of them is left in info."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.run.runner import Runner, RunRequest
from gpubench.stores import RunDir
from gpubench.workload import build_config, load

RUN_ID = "facts-probe-20261202T000000Z-f00d00"

PROBE = r'''
import time
from dataclasses import dataclass
from gpubench.catalog import WorkloadSpec
from gpubench.workload import MetricDef

@dataclass
class Config:
    device: str = "cpu"
    dtype: str = "float16"

SMOKE = {}
METRICS = {"value": MetricDef("units", "higher")}
SPEC = WorkloadSpec(name="facts-probe", title="t", study="facts probe", setups=("as-configured", "own-dtype"),
                    gpus="none", gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={},
                    module="facts_probe")

def run_setup(setup, config, ctx):
    if setup == "own-dtype":
        ctx.dtype = "float32"  # as a CPU run of a float16 model computes
    ctx.progress("timed")
    end = time.perf_counter() + 1.0  # 20 samples: enough for a verdict (min_samples)
    while time.perf_counter() < end:
        pass
    ctx.progress("done")
    ctx.info["engine"] = "probe"
    return {"value": 1.0}
'''

HOOK = r'''
import sys
sys.path.insert(0, {folder!r})
import facts_probe
from gpubench.catalog import WORKLOADS
WORKLOADS._items[facts_probe.SPEC.name] = facts_probe.SPEC
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "facts_probe.py").write_text(PROBE)
    (folder / "sitecustomize.py").write_text(HOOK.format(folder=str(folder)))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("facts_probe", None)
    import facts_probe

    monkeypatch.setitem(WORKLOADS._items, facts_probe.SPEC.name, facts_probe.SPEC)
    yield facts_probe
    sys.modules.pop("facts_probe", None)


def test_each_result_says_its_device_dtype_and_what_was_sampled(tmp_path, probe):
    request = RunRequest(spec=probe.SPEC, setups=list(probe.SPEC.setups), repeats=1, smoke=False, run_id=RUN_ID,
                         config=build_config(load(probe.SPEC), False, {}), weights="random")
    run_dir = RunDir.create(tmp_path / "runs", RUN_ID, echo=io.StringIO())
    Runner(request, run_dir, echo=lambda text: None).run(argv=["gpubench", "run", "facts-probe"])
    run_dir.close()
    records = [json.loads(line) for line in (run_dir.path / "results.jsonl").read_text().splitlines()]
    results = {r["setup"]: r for r in records if r["kind"] == "result"}
    assert [r["status"] for r in results.values()] == ["ok", "ok"]
    assert [(r["device"], r["device_name"], r["dtype"]) for r in results.values()] == [
        ("cpu", None, "float16"), ("cpu", None, "float32")]
    cores = len(os.sched_getaffinity(0))
    for r in results.values():
        sampled = r["utilisation"]
        assert (sampled["scope"], sampled["cores"], sampled["not_sampled"]) == ("timed", cores, None)
        assert sampled["samples"] == r["metrics"]["util_samples"]["value"] >= 2
        assert 0.9 <= sampled["seconds"] < 5  # the timed part, not the whole setup
        assert sampled["busiest_thread"]["pid"] > 0 and sampled["busiest_thread"]["intervals"] >= 1
        assert r["info"] == {"engine": "probe"}
        assert r["verdict"]["figures"]["cores"] == cores  # the runner's verdict read the sampler's core count
        assert r["energy"]["absent"].startswith("ran on the CPU")
