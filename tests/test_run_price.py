"""The hourly price is a fact of the run, not of the machine: `run_started.price_usd_per_hour` (schema 1.4), and every
reader (report, summary, recommend, site, compare) takes it from one place, `StoredRun.price_usd_per_hour`. A record
before 1.4 kept it in its environment block and reads the same (schema.upgraded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubench.results import report, stored_runs
from gpubench.schema import SCHEMA_VERSION, Environment, RunStarted, parse_record, to_line

H200_RUNS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def started_line(version: str, environment: dict, **fields) -> str:
    return json.dumps({"schema_version": version, "run_id": "train-compile-20261130T000000Z-abcdef",
                       "ts": "2026-11-30T00:00:00.000000Z", "kind": "run_started", "workload": "train-compile",
                       "study": "s", "setups": ["eager-sdpa"], "repeats": 1, "smoke": False, "config": {},
                       "environment": {"python": "3.12", "platform": "linux", **environment}, **fields})


def test_a_run_started_before_1_4_reads_its_price_out_of_the_environment():
    started = parse_record(started_line("1.3", {"price_usd_per_hour": 3.86, "launcher": "runcrate-job"}))
    assert isinstance(started, RunStarted)
    assert started.price_usd_per_hour == 3.86 and started.environment.launcher == "runcrate-job"
    assert "price_usd_per_hour" not in started.environment.model_dump()
    unpriced = parse_record(started_line("1.3", {"price_usd_per_hour": None}))
    assert unpriced.price_usd_per_hour is None


def test_from_1_4_the_price_is_the_runs_and_the_environment_has_none():
    started = RunStarted(run_id="r", workload="w", study="s", setups=["a"], repeats=1, smoke=False, config={},
                         environment=Environment(python="3", platform="p"), price_usd_per_hour=2.5)
    line = json.loads(to_line(started))
    assert line["schema_version"] == SCHEMA_VERSION and line["price_usd_per_hour"] == 2.5
    assert "price_usd_per_hour" not in line["environment"]
    assert parse_record(started_line("1.4", {"price_usd_per_hour": 2.5})) is None  # 1.4's block has no price


def test_every_reader_takes_the_price_from_the_run(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    result = {"schema_version": "1.3", "run_id": "train-compile-20261130T000000Z-abcdef",
              "ts": "2026-11-30T00:00:01.000000Z", "kind": "result", "setup": "eager-sdpa", "repeat": 1,
              "status": "ok", "metrics": {"tokens_per_s": {"value": 1e6, "unit": "tokens/s", "better": "higher"}}}
    (folder / "results.jsonl").write_text(started_line("1.3", {"price_usd_per_hour": 3.6}) + "\n"
                                          + json.dumps(result) + "\n")
    [run] = stored_runs.discover([str(tmp_path)])
    assert run.price_usd_per_hour == 3.6
    [table] = report.build([run])
    [row] = table.rows
    assert row.price == 3.6  # and its cost at that price: $0.001/s, 1M tokens in 1 s
    assert row.metrics["usd_per_1M_tokens"].median == pytest.approx(0.001)


@pytest.mark.skipif(not H200_RUNS.exists(), reason="no stored runs")
def test_the_stored_h200_runs_keep_their_prices():
    runs = stored_runs.discover([str(H200_RUNS)])
    priced = [run for run in runs if run.price_usd_per_hour]
    assert priced and {run.price_usd_per_hour for run in priced} == {3.86}
