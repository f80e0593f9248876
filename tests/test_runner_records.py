"""The runner in process around real workers (first-matmul's smoke run, twice, priced): what config.json
says, the records in order with their counters, cost metrics from the workload's basis pointing the
right way, what a person reads, and a worker that dies before it reports."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from gpubench import __version__
from gpubench.catalog import WORKLOADS, CostBasis
from gpubench.run.runner import Runner, RunRequest
from gpubench.schema import SCHEMA_VERSION
from gpubench.stores import RunDir
from gpubench.workload import build_config, load

RUN_ID = "first-matmul-20261130T000000Z-a1b2c3"
# first-matmul has no cost basis of its own: one on its warm time shows the runner's plumbing.
BASIS = CostBasis(metric="warm_matmul_ms", unit="warm matmul", per=1, kind="seconds")
PRICE = 7.2


def run(tmp_path, spec, repeats, echo):
    module = load(spec)
    request = RunRequest(spec=spec, setups=["matmul"], repeats=repeats, smoke=True, run_id=RUN_ID,
                         config=build_config(module, True, {}), price_usd_per_hour=PRICE, weights="random",
                         weight_paths={"org/none": None})
    run_dir = RunDir.create(tmp_path, RUN_ID, echo=io.StringIO())
    finished = Runner(request, run_dir, echo=echo.append).run(argv=["gpubench", "run", "x"], store_url="s3://b/p")
    run_dir.close()
    return finished, run_dir.path, request


def test_a_priced_run_of_two_repeats(tmp_path):
    # One run, every check on it: mutation testing credits a test only with what ran inside it.
    said: list[str] = []
    spec = dataclasses.replace(WORKLOADS.get("first-matmul"), cost=BASIS)
    finished, folder, request = run(tmp_path, spec, 2, said)
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    twice = (finished, folder, request, records, said)
    check_config_json(twice)
    check_records_in_order(twice)
    check_costs(twice)
    check_what_a_person_reads(twice)


def check_config_json(twice):
    _, folder, request, records, _ = twice
    config = json.loads((folder / "config.json").read_text())
    environment = config.pop("environment")
    assert config == {
        "schema_version": SCHEMA_VERSION, "gpubench_version": __version__, "run_id": RUN_ID,
        "workload": "first-matmul", "study": request.spec.study, "setups": ["matmul"], "repeats": 2,
        "smoke": True, "weights": "random", "weight_paths": {"org/none": None}, "price_usd_per_hour": PRICE,
        "config": dataclasses.asdict(request.config), "command": ["gpubench", "run", "x"], "store": "s3://b/p"}
    assert environment == records[0]["environment"] and records[0]["price_usd_per_hour"] == PRICE
    assert "price_usd_per_hour" not in environment  # the run's price, not the machine's


def check_records_in_order(twice):
    finished, _, request, records, _ = twice
    started = records[0]
    assert {k: started[k] for k in ("kind", "run_id", "workload", "study", "setups", "repeats", "smoke", "config")} == {
        "kind": "run_started", "run_id": RUN_ID, "workload": "first-matmul", "study": request.spec.study,
        "setups": ["matmul"], "repeats": 2, "smoke": True, "config": dataclasses.asdict(request.config)}
    runner_progress = [r for r in records if r["kind"] == "progress" and r["phase"] == "setup"]
    assert [(p["setup"], p["repeat"], p["done"], p["total"]) for p in runner_progress] == [
        ("matmul", 1, 0, 2), ("matmul", 2, 1, 2)]
    results = [r for r in records if r["kind"] == "result"]
    assert [(r["setup"], r["repeat"], r["status"]) for r in results] == [("matmul", 1, "ok"), ("matmul", 2, "ok")]
    assert records.index(results[0]) < records.index(runner_progress[1])  # repeat 2 starts after 1 reported
    assert records[-1]["kind"] == "run_finished" and records[-1]["status"] == "ok" == finished.status
    assert records[-1]["duration_s"] > 0
    [summary] = records[-1]["summary"]
    assert (summary["setup"], summary["ok_repeats"], summary["repeats"]) == ("matmul", 2, 2)
    assert summary["metrics"]["warm_matmul_ms"]["n"] == 2


def check_costs(twice):
    _, _, _, records, _ = twice
    for result in (r for r in records if r["kind"] == "result"):
        m = result["metrics"]
        usd = BASIS.usd_per_unit(m["warm_matmul_ms"]["value"], PRICE)
        assert m["usd_per_warm_matmul"] == {"value": pytest.approx(usd), "unit": "USD/warm matmul",
                                            "better": "lower", "role": "cost"}
        assert m["warm_matmul_per_usd"] == {"value": pytest.approx(1 / usd), "unit": "warm matmul/USD",
                                            "better": "higher", "role": "value"}


def check_what_a_person_reads(twice):
    _, folder, _, _, said = twice
    log = (folder / "run.log").read_text()
    for line in ("[1/2] first-matmul matmul (repeat 1)", "[2/2] first-matmul matmul (repeat 2)"):
        assert line in said and line in log.splitlines()
    assert any(line.startswith("  matmul: ok  ") and " warm_matmul_ms=" in line for line in log.splitlines())
    summary = (folder / "summary.md").read_text()
    assert summary.startswith(f"# first-matmul: {RUN_ID}\n\n") and "\n| setup |" in summary
    assert "| setup |" in said[-1] and summary.endswith(said[-1] + "\n")  # the table, last
    assert (folder / "summary.csv").read_text().startswith("setup,")


def test_a_worker_that_dies_before_reporting_is_an_error_row(tmp_path, monkeypatch):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, sys\nprint('dying on purpose', file=sys.stderr, flush=True)\nos._exit(7)\n")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    said: list[str] = []
    finished, folder, _ = run(tmp_path, WORKLOADS.get("first-matmul"), 1, said)
    [row] = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()
             if '"kind":"result"' in line]
    assert (row["status"], row["error"]) == ("error", "worker exited with code 7 before reporting: dying on purpose")
    assert finished.status == "failed" and "[matmul] dying on purpose" in (folder / "run.log").read_text()


def test_what_a_person_reads_of_one_result():
    from gpubench.run.runner import describe
    from gpubench.schema import Metric, SetupResult

    metrics = {name: Metric(value=value, unit="u") for name, value in
               [("big", 1234.5), ("edge", 1000.0), ("below", 999.94), ("small", 0.0123456), ("neg", -2500.0),
                ("six", 6.0), ("seventh", 7.0)]}
    ok = SetupResult(run_id="r", setup="a", repeat=1, status="ok", metrics=metrics)
    assert describe(ok) == "  a: ok  big=1,234 u, edge=1,000 u, below=999.9 u, small=0.01235 u, neg=-2,500 u, six=6 u"
    oom = SetupResult(run_id="r", setup="b", repeat=1, status="oom", error="OutOfMemoryError: CUDA out of memory")
    assert describe(oom) == "  b: OOM OutOfMemoryError: CUDA out of memory"
    assert describe(SetupResult(run_id="r", setup="c", repeat=1, status="skipped")) == "  c: SKIPPED"


def test_workers_never_import_from_the_working_directory(tmp_path, monkeypatch):
    # A gpubench source tree in the folder a run starts from is not the installed package (its workloads/ is
    # not gpubench/workloads/): the worker must import the installed one.
    decoy = tmp_path / "gpubench"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('a source tree, not the installed package')\n")
    monkeypatch.chdir(tmp_path)
    finished, folder, _ = run(tmp_path, WORKLOADS.get("first-matmul"), 1, [])
    assert finished.status == "ok", (folder / "run.log").read_text()[-500:]
