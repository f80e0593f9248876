"""The worker contract, in process: setups grouped by session, one result per setup, skips and failures as rows."""

import io
import json

import contract_workload as workload
import pytest

from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.run.runner import overall_status
from gpubench.run.worker import Worker
from gpubench.schema import parse_record
from gpubench.workload import groups, load

SPEC = WorkloadSpec(name="contract-test", title="t", study="t", setups=tuple(workload.SETUPS), gpus="none",
                    gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={}, module="contract_workload")


@pytest.fixture(autouse=True)
def registered():
    WORKLOADS._items[SPEC.name] = SPEC
    workload.EVENTS.clear()
    yield
    del WORKLOADS._items[SPEC.name]


def run_group(setups, **config):
    out = io.StringIO()
    job = {"workload": SPEC.name, "setups": setups, "repeat": 1, "run_id": "r", "config": config, "smoke": False,
           "weights": "random"}
    Worker(job, out).run_group()
    return [parse_record(line) for line in out.getvalue().splitlines()]


def test_adjacent_setups_with_one_key_share_a_group_and_order_is_kept():
    config = workload.Config()
    assert groups(load(SPEC), ["a1", "a2", "b1", "skip", "oom"], config) == [["a1", "a2"], ["b1"], ["skip", "oom"]]
    assert groups(load(SPEC), ["a1", "b1", "a2"], config) == [["a1"], ["b1"], ["a2"]]  # never reordered


def test_one_session_serves_the_group_and_its_numbers_come_once():
    results = run_group(["a1", "a2"])
    assert workload.EVENTS == ["open a", "run a1 in server-a", "run a2 in server-a", "close a"]
    assert [(r.setup, r.status) for r in results] == [("a1", "ok"), ("a2", "ok")]
    for r in results:  # what the machine did is every result's own (gpubench/run/utilisation.py)
        assert r.utilisation.scope and "util_samples" in r.metrics
    assert results[0].metrics["ready_s"].value == 1.5 and results[0].info == {"server": "a", "setup": "a1"}
    assert "ready_s" not in results[1].metrics and results[1].info == {"setup": "a2"}
    assert results[0].metrics["value"].unit == "units" and results[0].metrics["value"].better == "higher"


def test_a_failing_setup_is_a_row_and_the_session_goes_on():
    results = run_group(["a1", "a2"], fail="a1")
    assert [(r.setup, r.status) for r in results] == [("a1", "error"), ("a2", "ok")]
    assert results[0].error == "ValueError: a1 broke"
    assert workload.EVENTS[-1] == "close a"


def test_skip_and_oom_are_their_own_statuses():
    skip, oom = run_group(["skip", "oom"])
    assert (skip.status, skip.error) == ("skipped", "needs 4 GPUs, this host has 0")
    assert (oom.status, oom.error) == ("oom", "MemoryError: cannot allocate")


def test_a_session_that_does_not_start_fails_every_setup_of_its_group():
    results = run_group(["a1", "a2"], session_fails=True)
    why = "RuntimeError: server a did not start"
    assert [(r.setup, r.status, r.error) for r in results] == [("a1", "error", why), ("a2", "error", why)]
    assert "run a1 in server-a" not in workload.EVENTS


def test_results_are_json_lines_that_round_trip():
    out = io.StringIO()
    Worker({"workload": SPEC.name, "setups": ["b1"], "repeat": 2, "run_id": "r", "config": {}, "smoke": True,
            "weights": "auto"}, out).run_group()
    line = out.getvalue().strip()
    record = json.loads(line)
    assert record["utilisation"]["scope"] == "setup"  # the probe reports no timed phase
    assert record["info"] == {"server": "b", "setup": "b1"} and parse_record(line).repeat == 2


def test_skipped_setups_do_not_fail_a_run_but_errors_do():
    rows = run_group(["a1", "a2"]) + run_group(["skip"])
    assert overall_status(rows) == "ok"
    assert overall_status(rows + run_group(["oom"])) == "partial"
    assert overall_status(run_group(["skip"])) == "failed"


def test_derived_metrics_are_recorded_and_merged_into_the_summary(tmp_path):
    import io as _io

    from gpubench.run.runner import Runner, RunRequest
    from gpubench.schema import summarize_results
    from gpubench.stores import RunDir

    run_dir = RunDir.create(tmp_path, "contract-test-20261130T000000Z-abcdef", echo=_io.StringIO())
    runner = Runner(RunRequest(spec=SPEC, setups=["a1", "a2", "b1"], repeats=1, smoke=False,
                               run_id="r", config=workload.Config()), run_dir, echo=lambda text: None)
    runner.results = run_group(["a1", "a2"]) + run_group(["b1"]) + run_group(["oom"])
    runner._derive(load(SPEC), repeat=1)
    run_dir.close()
    derived = [json.loads(line) for line in (run_dir.path / "results.jsonl").read_text().splitlines()]
    assert [(d["kind"], d["setup"], d["metrics"]["speedup"]["value"]) for d in derived] == [
        ("derived", "a1", 1.0), ("derived", "a2", 3.0), ("derived", "b1", 2.0)]  # oom rows get none
    summary = {s.setup: s for s in summarize_results(["a1", "a2", "b1"], runner.results)}
    assert summary["a2"].metrics["speedup"].median == 3.0 and summary["a2"].metrics["speedup"].unit == "x"
