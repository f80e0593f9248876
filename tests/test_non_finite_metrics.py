"""A metric that is not a finite number (a loss that diverged to NaN, a ratio over a zero time) never loses its
result: through a real worker process and the runner, the result keeps its other metrics, says which ones were
not finite and what they were, and the run is not blamed on the worker."""

from __future__ import annotations

import io
import json
import math
import sys

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.run.runner import Runner, RunRequest
from gpubench.schema import parse_record, split_finite
from gpubench.stores import RunDir
from gpubench.workload import build_config, load

RUN_ID = "nan-probe-20261201T000000Z-a1b2c3"

PROBE = r'''
from dataclasses import dataclass
from gpubench.catalog import CostBasis, WorkloadSpec
from gpubench.workload import MetricDef

@dataclass
class Config:
    pass

SMOKE = {}
METRICS = {"tokens_per_s": MetricDef("tokens/s", "higher"), "loss": MetricDef("nats", "lower"),
           "speedup": MetricDef("x", "higher"), "ratio": MetricDef("x", "higher")}
SPEC = WorkloadSpec(name="nan-probe", title="t", study="nan probe", setups=("diverged", "steady"),
                    gpus="none", gpu_count=0,
                    min_gpu_memory_gb=0, expected_minutes=1, dependencies={}, module="nan_probe",
                    cost=CostBasis(metric="tokens_per_s", unit="1M tokens", per=1e6, kind="rate"))

def run_setup(setup, config, ctx):
    if setup == "diverged":
        return {"tokens_per_s": 123.0, "loss": float("nan"), "speedup": float("inf")}
    return {"tokens_per_s": 100.0, "loss": 2.0}

def derive(config, results):
    return {"steady": {"ratio": float("-inf")}}
'''

HOOK = r'''
import sys
sys.path.insert(0, {folder!r})
import nan_probe
from gpubench.catalog import WORKLOADS
WORKLOADS._items[nan_probe.SPEC.name] = nan_probe.SPEC
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "nan_probe.py").write_text(PROBE)
    (folder / "sitecustomize.py").write_text(HOOK.format(folder=str(folder)))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("nan_probe", None)
    import nan_probe

    monkeypatch.setitem(WORKLOADS._items, nan_probe.SPEC.name, nan_probe.SPEC)
    yield nan_probe
    sys.modules.pop("nan_probe", None)


def test_a_nan_metric_keeps_its_result_and_is_named(tmp_path, probe):
    said: list[str] = []
    request = RunRequest(spec=probe.SPEC, setups=["diverged", "steady"], repeats=1, smoke=False, run_id=RUN_ID,
                         config=build_config(load(probe.SPEC), False, {}), price_usd_per_hour=3.6, weights="random")
    run_dir = RunDir.create(tmp_path / "runs", RUN_ID, echo=io.StringIO())
    finished = Runner(request, run_dir, echo=said.append).run(argv=["gpubench", "run", "nan-probe"])
    run_dir.close()
    lines = (run_dir.path / "results.jsonl").read_text().splitlines()
    results = {r["setup"]: r for r in map(json.loads, lines) if r["kind"] == "result"}
    diverged, steady = results["diverged"], results["steady"]
    assert (diverged["status"], diverged["error"]) == ("ok", None)
    assert diverged["metrics"]["tokens_per_s"]["value"] == 123.0
    assert diverged["metrics"]["usd_per_1M_tokens"]["value"] == pytest.approx(3.6 / 123.0 * 1e6 / 3600)
    assert "loss" not in diverged["metrics"] and "speedup" not in diverged["metrics"]
    assert diverged["info"]["not_finite"] == {"loss": "nan", "speedup": "inf"}
    assert all(parse_record(line) is not None for line in lines)  # every line is a record a reader takes
    assert "not_finite" not in steady["info"] and steady["metrics"]["loss"]["value"] == 2.0
    [derived] = [r for r in map(json.loads, lines) if r["kind"] == "derived"] or [None]
    assert derived is None  # its only metric was -inf: nothing to record, and the run goes on
    assert steady["metrics"].get("ratio") is None
    assert finished.status == "ok"
    assert "  diverged: not finite, left out: loss=nan, speedup=inf" in said
    assert "  steady: derived, not finite, left out: ratio=-inf" in said
    assert not any("before reporting" in line for line in said)
    summary = {s["setup"]: s for s in json.loads(lines[-1])["summary"]}
    assert summary["diverged"]["metrics"]["tokens_per_s"]["median"] == 123.0


def test_split_finite():
    kept, dropped = split_finite({"a": 1.0, "b": math.nan, "c": -math.inf, "d": 2})
    assert (kept, dropped) == ({"a": 1.0, "d": 2.0}, {"b": "nan", "c": "-inf"})


def test_a_record_with_a_null_metric_from_an_older_writer_is_kept_and_says_so():
    line = json.dumps({"schema_version": "1.1", "kind": "result", "run_id": "r", "ts": "t", "setup": "s", "repeat": 1,
                       "status": "ok", "metrics": {"tokens_per_s": {"value": 123.0, "unit": "tokens/s"},
                                                   "loss": {"value": None, "unit": "nats"}}})
    record = parse_record(line)
    assert list(record.metrics) == ["tokens_per_s"] and record.info == {"not_finite": {"loss": "null"}}
