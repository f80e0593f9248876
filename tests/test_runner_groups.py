"""The runner in process around real workers of a probe workload (written here, registered in the workers
through a sitecustomize hook): what each worker is given, groups and their labels in run.log, progress
counters, cost and pct_of_peak added to ok results only, derived metrics per repeat, a worker that dies
in the middle of its group, and Ctrl-C: the worker killed, what was measured kept, the run `interrupted`.
Every number is worked out by hand from the table in PROBE."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
import time

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.results.summary import NO_PRICE, SMOKE_BANNER
from gpubench.run import utilisation
from gpubench.run.runner import Runner, RunRequest
from gpubench.stores import RunDir
from gpubench.workload import build_config, load

RUN_ID = "runner-probe-20261130T000000Z-a1b2c3"
PRICE = 3.6  # USD/h: a unit at 2 units/s costs 3.6 / 2 / 3600 = 0.0005 USD

PROBE = r'''
import os, sys, time
from dataclasses import dataclass
from gpubench.catalog import CostBasis, WorkloadSpec
from gpubench.workload import MetricDef

# (setup, repeat) -> value reported; None: the setup fails
VALUES = {("a1", 1): 2.0, ("a2", 1): 4.0, ("b1", 1): 4.0, ("a1", 2): 3.0, ("a2", 2): 0.0, ("b1", 2): None,
          ("a3", 1): 1.0}
DTYPES = {"b1": "fp8", "a2": "int4"}  # what the matmuls ran in; a1 leaves it to the config

@dataclass
class Config:
    dtype: str = "bf16"
    die_in: str = ""  # this setup's worker exits before reporting it
    quietly: bool = False  # ... without a word on stderr
    slow: str = ""  # this setup takes 3 s, then says so

SMOKE = {}
METRICS = {"value": MetricDef("units", "higher"), "achieved_tflops": MetricDef("TFLOP/s", "higher"),
           "ratio": MetricDef("x", "higher"), "gap": MetricDef("units", "lower")}
SPEC = WorkloadSpec(name="runner-probe", title="t", study="runner probe", setups=("a1", "a2", "a3", "b1"),
                    gpus="none", gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={},
                    module="runner_probe",
                    cost=CostBasis(metric="value", unit="unit", per=1, kind="rate"))

def session_key(setup, config):
    return setup[0], config.dtype

def run_setup(setup, config, ctx):
    if setup == config.die_in:
        if not config.quietly:
            print("  dying on purpose " + "x" * 600 + "  \n\n", file=sys.stderr, flush=True)
        os._exit(3)
    print(f"working on {setup}", file=sys.stderr, flush=True)
    ctx.progress("timed", message=setup)
    ctx.info.update(weights=ctx.weights, weight_paths=ctx.weight_paths, smoke=ctx.smoke, run_id=ctx.run_id,
                    repeat=ctx.repeat)
    ctx.dtype = DTYPES.get(setup)
    if setup == config.slow:
        time.sleep(3)
        print(f"{setup} finished", file=sys.stderr, flush=True)
    value = VALUES[(setup, ctx.repeat)]
    if value is None:
        raise RuntimeError(f"{setup} broke")
    return {"value": value, "achieved_tflops": 494.5}

def derive(config, results):
    by = {r.setup: r.metrics["value"].value for r in results}
    if not config.dtype or not {"a1", "b1"} <= set(by):
        return {"a2": {}}
    return {"a2": {}, "a1": {"ratio": by["a1"] / by["b1"], "gap": by["b1"] - by["a1"]}, "nowhere": {"ratio": 1.0}}
'''

HOOK = r'''
import sys
sys.path.insert(0, {folder!r})
print("  a word from the hook on stdout  \n", flush=True)  # before the worker keeps stdout for its records
import runner_probe
from gpubench.catalog import WORKLOADS
from gpubench.run import ran_with
WORKLOADS._items[runner_probe.SPEC.name] = runner_probe.SPEC
ran_with.device = lambda config: ("cuda:0", "NVIDIA H100 80GB HBM3")  # the GPU the peaks are read for
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """The probe workload, importable and registered here and in every worker the runner starts."""
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "runner_probe.py").write_text(PROBE)
    (folder / "sitecustomize.py").write_text(HOOK.format(folder=str(folder)))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("runner_probe", None)
    import runner_probe

    monkeypatch.setitem(WORKLOADS._items, runner_probe.SPEC.name, runner_probe.SPEC)
    yield runner_probe
    sys.modules.pop("runner_probe", None)


def run(tmp_path, probe, setups, repeats=1, price=None, echo=None, smoke=False, verbose=False, **config):
    request = RunRequest(spec=probe.SPEC, setups=setups, repeats=repeats, smoke=smoke, run_id=RUN_ID,
                         config=build_config(load(probe.SPEC), False, {k: str(v) for k, v in config.items()}),
                         price_usd_per_hour=price, weights="random", weight_paths={"org/model": "/w/model"})
    run_dir = RunDir.create(tmp_path / "runs", RUN_ID, echo=io.StringIO())
    started = time.perf_counter()
    finished = Runner(request, run_dir, echo=echo, verbose=verbose).run(argv=["gpubench", "run", "runner-probe"])
    assert 0 < finished.duration_s <= round(time.perf_counter() - started, 3) + 0.001
    assert finished.duration_s == round(finished.duration_s, 3)
    run_dir.close()
    records = [json.loads(line) for line in (run_dir.path / "results.jsonl").read_text().splitlines()]
    return finished, records, (run_dir.path / "run.log").read_text().splitlines()


def of(records, kind):
    return [r for r in records if r["kind"] == kind]


def test_two_repeats_of_two_groups(tmp_path, probe, capsys):
    finished, records, log = run(tmp_path, probe, ["a1", "a2", "b1"], repeats=2, price=PRICE)
    capsys_err = capsys.readouterr().err
    said = capsys_err.splitlines()

    steps = [(p["setup"], p["repeat"], p["done"], p["total"]) for p in of(records, "progress") if p["phase"] == "setup"]
    assert steps == [("a1", 1, 0, 6), ("b1", 1, 2, 6), ("a1", 2, 3, 6), ("b1", 2, 5, 6)]
    assert [p["message"] for p in of(records, "progress") if p["phase"] == "timed"] == ["a1", "a2", "b1"] * 2
    for line in ("[1/6] runner-probe a1, a2 (repeat 1)", "[3/6] runner-probe b1 (repeat 1)",
                 "[4/6] runner-probe a1, a2 (repeat 2)", "[6/6] runner-probe b1 (repeat 2)"):
        assert line in said and line in log

    results = {(r["setup"], r["repeat"]): r for r in of(records, "result")}
    assert list(results) == [("a1", 1), ("a2", 1), ("b1", 1), ("a1", 2), ("a2", 2), ("b1", 2)]
    assert results[("a1", 1)]["utilisation"]["scope"] == "timed"  # the machine's
    assert results[("a1", 1)]["verdict"]["label"] and results[("a1", 1)]["verdict"]["basis"]  # the runner's
    assert [results[key]["dtype"] for key in [("a1", 1), ("a2", 1), ("b1", 1)]] == ["bf16", "int4", "fp8"]
    assert results[("a1", 1)]["info"] == {  # what the worker was given (not the price: the runner costs)
        "weights": "random", "weight_paths": {"org/model": "/w/model"}, "smoke": False, "run_id": RUN_ID, "repeat": 1}
    assert results[("b1", 2)]["status"] == "error" and results[("b1", 2)]["error"] == "RuntimeError: b1 broke"

    metrics = {key: {name: m["value"] for name, m in r["metrics"].items() if name not in utilisation.METRICS}
               for key, r in results.items()}
    assert metrics[("a1", 1)] == {"value": 2.0, "achieved_tflops": 494.5, "usd_per_unit": pytest.approx(0.0005),
                                  "unit_per_usd": pytest.approx(2000.0), "pct_of_peak": 50.0}
    assert metrics[("b1", 1)] == {"value": 4.0, "achieved_tflops": 494.5, "usd_per_unit": pytest.approx(0.00025),
                                  "unit_per_usd": pytest.approx(4000.0), "pct_of_peak": pytest.approx(24.98737)}
    assert metrics[("a2", 1)] == {"value": 4.0, "achieved_tflops": 494.5, "usd_per_unit": pytest.approx(0.00025),
                                  "unit_per_usd": pytest.approx(4000.0)}  # int4: no peak to compare with
    assert metrics[("a2", 2)] == {"value": 0.0, "achieved_tflops": 494.5}  # nothing made: no price per unit
    assert metrics[("a1", 2)]["pct_of_peak"] == 50.0
    assert metrics[("b1", 2)] == {}
    assert results[("a1", 1)]["metrics"]["pct_of_peak"] == {"value": 50.0, "unit": "%", "better": "higher"}

    [derived] = of(records, "derived")
    assert (derived["setup"], derived["repeat"], derived["metrics"]) == ("a1", 1, {
        "ratio": {"value": 0.5, "unit": "x", "better": "higher"}, "gap": {"value": 2.0, "unit": "units",
                                                                          "better": "lower"}})
    assert "  a1: ratio=0.5 x, gap=2 units" in said and "  a1: ratio=0.5 x, gap=2 units" in log
    assert ("  a1: ok  value=2 units, achieved_tflops=494.5 TFLOP/s, usd_per_unit=0.0005 USD/unit, "
            "unit_per_usd=2,000 unit/USD, pct_of_peak=50 %") in log
    assert "  b1: ERROR RuntimeError: b1 broke" in said

    assert finished.status == "partial" == records[-1]["status"]
    summary = {s["setup"]: s for s in records[-1]["summary"]}
    assert [(s, summary[s]["ok_repeats"], summary[s]["repeats"]) for s in summary] == [
        ("a1", 2, 2), ("a2", 2, 2), ("b1", 1, 2)]
    ratio = summary["a1"]["metrics"]["ratio"]  # derived metrics join their results: repeat 1's only (b1 failed in 2)
    assert (ratio["n"], ratio["median"]) == (1, 0.5) and "ratio" not in summary["a2"]["metrics"]

    # Each worker's stderr and stray stdout, labelled with its group, in run.log; the terminal only says where.
    for line in ("[a1..a2] working on a1", "[a1..a2] working on a2", "[b1] working on b1",
                 "[a1..a2]   a word from the hook on stdout", "[b1]   a word from the hook on stdout"):
        assert line in log, line
    assert "working on" not in capsys_err
    assert "the failed setups' tracebacks and the libraries' output are in run.log (--verbose shows them)" in said
    assert "[a1..a2] " not in log and "[b1] " not in log  # a blank line on stdout is not logged
    summary_md = (tmp_path / "runs" / RUN_ID / "summary.md").read_text()
    assert NO_PRICE not in summary_md and SMOKE_BANNER not in summary_md
    assert "| setup | status | n | value (units) | achieved_tflops (TFLOP/s) |" in summary_md  # METRICS' order


def test_verbose_relays_the_workers_stderr_as_is(tmp_path, probe, capsys):
    run(tmp_path, probe, ["b1"], repeats=2, verbose=True)  # b1 fails in repeat 2
    said = capsys.readouterr().err
    assert "working on b1" in said.splitlines() and "[b1] working on b1" not in said
    assert "working on b1\n\n" not in said
    assert "are in run.log (--verbose shows them)" not in said  # it is already shown


def test_a_worker_that_dies_in_its_group(tmp_path, probe, capsys):
    finished, records, log = run(tmp_path, probe, ["a1", "a2", "a3"], die_in="a2")
    rows = [(r["setup"], r["status"], r["error"], sorted(set(r["metrics"]) - set(utilisation.METRICS)))
            for r in of(records, "result")]
    last_words = "dying on purpose " + "x" * 600  # the last line said on stderr, stripped, and the error cut at 500
    error = f"worker exited with code 3 before reporting: {last_words}"[:500]
    assert rows == [("a1", "ok", None, ["achieved_tflops", "pct_of_peak", "value"]),  # unpriced: no costs
                    ("a2", "error", error, []), ("a3", "error", error, [])]
    assert finished.status == "partial" and f"[a1..a3]   {last_words}  " in log
    assert of(records, "derived") == []  # derive asked, nothing to say without b1
    assert NO_PRICE in (tmp_path / "runs" / RUN_ID / "summary.md").read_text()


def test_a_worker_that_dies_without_a_word(tmp_path, probe):
    finished, records, _ = run(tmp_path, probe, ["b1"], die_in="b1", quietly=True)
    [row] = of(records, "result")
    assert (row["status"], row["error"]) == ("error", "worker exited with code 3 before reporting: no output")
    assert finished.status == "failed"


def test_ctrl_c_kills_the_worker_and_keeps_what_was_measured(tmp_path, probe):
    said = []

    def person(text):
        said.append(text)
        if text.startswith("  a1: ok"):
            raise KeyboardInterrupt  # Ctrl-C while the worker is at work on a2

    finished, records, log = run(tmp_path, probe, ["a1", "a2", "b1"], repeats=2, echo=person, slow="a2")
    assert [(r["setup"], r["status"]) for r in of(records, "result")] == [("a1", "ok")]
    assert "[a1..a2] a2 finished" not in log  # the worker was killed, not waited for
    assert finished.status == "interrupted" == records[-1]["status"]
    assert [(s["setup"], s["ok_repeats"]) for s in records[-1]["summary"]] == [("a1", 1), ("a2", 0), ("b1", 0)]
    assert not any(text.startswith("[3/6]") for text in said)  # nothing more was started
    assert (tmp_path / "runs" / RUN_ID / "summary.md").read_text().startswith(f"# runner-probe: {RUN_ID}")


def test_ctrl_c_between_groups(tmp_path, probe):
    def person(text):
        if text.startswith("[3/3]"):
            raise KeyboardInterrupt

    finished, records, _ = run(tmp_path, probe, ["a1", "a2", "b1"], echo=person, smoke=True)
    assert [r["setup"] for r in of(records, "result")] == ["a1", "a2"]
    assert finished.status == "interrupted" and of(records, "derived") == []
    assert SMOKE_BANNER in (tmp_path / "runs" / RUN_ID / "summary.md").read_text()


def test_the_configs_dtype_when_the_result_names_none(tmp_path, probe):
    _, records, _ = run(tmp_path, probe, ["a1"], dtype="fp32")
    [result] = of(records, "result")
    assert result["metrics"]["pct_of_peak"]["value"] == pytest.approx(100 * 494.5 / 67)  # H100 fp32: 67 TFLOP/s
    assert records[0]["config"] == dataclasses.asdict(build_config(load(probe.SPEC), False, {"dtype": "fp32"}))
