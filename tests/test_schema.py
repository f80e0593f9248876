import json

import pytest

from gpubench.schema import (
    SCHEMA_VERSION,
    Environment,
    Metric,
    Progress,
    RunFinished,
    RunStarted,
    SetupResult,
    json_schema,
    parse_record,
    summarize,
    summarize_results,
    to_line,
)


def _env():
    return Environment(python="3.12.3", platform="Linux")


def test_every_record_kind_round_trips_through_a_line():
    records = [
        RunStarted(run_id="r", workload="w", study="s", setups=["a"], repeats=1, smoke=True, config={"x": 1},
                   environment=_env()),
        Progress(run_id="r", phase="timed", setup="a", repeat=1, done=3, total=20),
        SetupResult(run_id="r", setup="a", repeat=1, status="ok", metrics={"step_ms": Metric(value=1.5, unit="ms")}),
        SetupResult(run_id="r", setup="a", repeat=2, status="oom", error="OutOfMemoryError: CUDA out of memory"),
        RunFinished(run_id="r", status="partial", duration_s=1.0, summary=[]),
    ]
    for record in records:
        line = to_line(record)
        assert "\n" not in line
        assert parse_record(line) == record


def test_lines_that_are_not_records_are_none():
    for line in ["", "hello", "{not json", '{"a": 1}', "[1, 2]", '{"kind": "result"}',
                 json.dumps({"kind": "mystery", "schema_version": SCHEMA_VERSION, "run_id": "r"})]:
        assert parse_record(line) is None, line


def test_a_newer_major_version_is_refused_not_misread():
    line = json.dumps({"kind": "progress", "schema_version": "2.0", "run_id": "r", "phase": "x", "ts": "t"})
    with pytest.raises(ValueError, match="unsupported schema_version"):
        parse_record(line)


def test_json_schema_names_every_kind():
    text = json.dumps(json_schema())
    for kind in ("run_started", "progress", "result", "run_finished"):
        assert kind in text


def test_summary_statistics():
    s = summarize("ms", [10.0, 12.0, 11.0, 13.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (4, 11.5, 10.0, 13.0, 11.5)
    assert s.stdev == pytest.approx(1.2909944, rel=1e-6)
    assert s.cv == pytest.approx(1.2909944 / 11.5, rel=1e-6)
    assert summarize("ms", [5.0]).stdev == 0.0


def test_summaries_use_only_ok_repeats_and_keep_failed_setups():
    ok = [SetupResult(run_id="r", setup="a", repeat=i, status="ok", metrics={"t": Metric(value=v, unit="s")})
          for i, v in enumerate([1.0, 3.0], 1)]
    bad = SetupResult(run_id="r", setup="a", repeat=3, status="error", error="boom")
    oom = SetupResult(run_id="r", setup="b", repeat=1, status="oom", error="OOM")
    summary = {s.setup: s for s in summarize_results(["a", "b", "c"], [*ok, bad, oom])}
    assert summary["a"].status == "ok" and summary["a"].ok_repeats == 2 and summary["a"].repeats == 3
    assert summary["a"].metrics["t"].median == 2.0
    assert summary["b"].status == "oom" and summary["b"].metrics == {}
    assert summary["c"].status == "not-run"  # no result at all: the run ended before it
