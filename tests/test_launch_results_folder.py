"""A launched run's local folder, fed the job's output line by line: records to results.jsonl and the view,
text to run.log, secrets out of both and of job.json; the exit code, setup rows and counts the records
say; a folder for nothing launched removed; the upload to a real S3 server, and a failed one kept."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys

from gpubench.launcher import errors
from gpubench.launcher.progress import ProgressView
from gpubench.launcher.redact import Redactor
from gpubench.launcher.results import RunFolder, RunOutcome
from gpubench.schema import (
    Environment,
    Metric,
    Progress,
    RunFinished,
    RunStarted,
    SetupResult,
    summarize_results,
    to_line,
)
from gpubench.stores import S3Store

RUN_ID = "embed-20261130T000000Z-abc123"
SECRET = "rc_live_results-folder-secret-77"
SETUPS = ["bge-small-128", "bge-base-128", "bge-large-128"]


def result(setup, status="ok", repeat=1, value=2.0, error=None):
    metrics = {"texts_per_s": Metric(value=value * 1000, unit="texts/s", better="higher"),
               "p50_ms": Metric(value=value, unit="ms", better="lower"),
               "p99_ms": Metric(value=value * 3, unit="ms", better="lower"),
               "peak_mem_gib": Metric(value=1.5, unit="GiB", better="lower"),
               "load_s": Metric(value=0.25, unit="s", better="lower")} if status == "ok" else {}
    return SetupResult(run_id=RUN_ID, setup=setup, repeat=repeat, status=status, metrics=metrics, error=error)


def started(setups=SETUPS, repeats=1):
    return RunStarted(run_id=RUN_ID, workload="embed", study="s", setups=setups, repeats=repeats, smoke=True,
                      config={}, environment=Environment(python="3", platform="test"))


def finished(results, status="ok", setups=SETUPS):
    return RunFinished(run_id=RUN_ID, status=status, duration_s=1.0, summary=summarize_results(setups, results))


def folder(tmp_path, lines=()):
    view = ProgressView()
    view.add(RUN_ID, "L40S")
    run = RunFolder(str(tmp_path / "results"), RUN_ID, {"run_id": RUN_ID, "key": SECRET}, view, Redactor([SECRET]))
    for line in lines:
        run.feed(line)
    return run, view


def test_lines_go_to_the_records_or_the_log_without_secrets(tmp_path):
    first, ok = started(), result("bge-small-128")
    run, view = folder(tmp_path)
    assert run.feed(to_line(first)) == first
    assert run.feed(f"loading with token {SECRET}") is None
    assert run.feed(to_line(ok)) == ok
    run.feed(to_line(Progress(run_id=RUN_ID, phase="timed", setup="bge-base-128", done=1, total=3)))
    run.write_facts({"job": {"id": "job-1", "env": SECRET}, "cost": 0.5, "folder": tmp_path / "x"})
    run.close()
    run.close()  # twice is harmless
    assert run.path == tmp_path / "results" / RUN_ID
    assert [json.loads(line)["kind"] for line in (run.path / "results.jsonl").read_text().splitlines()] == [
        "run_started", "result", "progress"]
    assert (run.path / "run.log").read_text().splitlines() == ["loading with token ***"]
    assert view.runs[RUN_ID].last_lines == ["loading with token ***"]  # text goes to the view; records do not
    assert (view.runs[RUN_ID].setups_done, view.runs[RUN_ID].phase) == (1, "timed bge-base-128")
    assert json.loads((run.path / "config.json").read_text()) == {"run_id": RUN_ID, "key": SECRET}
    facts = (run.path / "job.json").read_text()
    assert facts == json.dumps({"cost": 0.5, "folder": str(tmp_path / "x"), "job": {"env": "***", "id": "job-1"}},
                               indent=2) + "\n"


def test_what_the_records_say_of_a_finished_run(tmp_path):
    results = [result("bge-small-128", value=2.0), result("bge-base-128", "oom", error="CUDA out of memory"),
               result("bge-large-128", value=4.0)]
    run, _ = folder(tmp_path, [to_line(r) for r in (started(), *results, finished(results, "partial"))])
    assert run.records_code() == errors.SETUPS_NOT_OK
    assert run.setup_counts() == (2, 3)
    assert run.setup_rows() == [
        {"setup": "bge-small-128", "status": "ok", "metrics": "texts_per_s=2000 texts/s, p50_ms=2 ms, p99_ms=6 ms"},
        {"setup": "bge-base-128", "status": "oom", "metrics": ""},
        {"setup": "bge-large-128", "status": "ok", "metrics": "texts_per_s=4000 texts/s, p50_ms=4 ms, p99_ms=12 ms"}]


def test_only_a_finished_ok_run_of_ok_or_skipped_results_exits_0(tmp_path):
    ok = [result(s) for s in SETUPS]
    skipped = [result(s, "skipped", error="no engine here") for s in SETUPS]
    cases = {
        "all ok": ([started(), *ok, finished(ok)], errors.OK),
        "no run_finished": ([started(), *ok], errors.SETUPS_NOT_OK),
        "finished partial": ([started(), *ok, finished(ok, "partial")], errors.SETUPS_NOT_OK),
        "finished ok, no results": ([started(), finished(ok)], errors.SETUPS_NOT_OK),
        "finished ok, one result failed": ([started(), *ok[:2], result(SETUPS[2], "error", error="x"),
                                            finished(ok)], errors.SETUPS_NOT_OK),
        # gpubench run's rule: a setup skipped for a stated reason fails nothing, a run where none ran does.
        "one skipped, the rest ok": ([started(), *ok[:2], skipped[2], finished(ok[:2] + skipped[2:])], errors.OK),
        "all skipped": ([started(), *skipped, finished(skipped)], errors.SETUPS_NOT_OK),
    }
    for n, (name, (records, code)) in enumerate(cases.items()):
        run, _ = folder(tmp_path / str(n), [to_line(r) for r in records])
        assert run.records_code() == code, name
    assert errors.OK != errors.SETUPS_NOT_OK


def test_without_a_summary_each_repeat_is_a_row(tmp_path):
    error = "RuntimeError: " + "x" * 200
    rows = [result("bge-small-128", repeat=1), result("bge-small-128", "error", repeat=2, error=error),
            result("bge-base-128", "skipped", repeat=1)]
    run, _ = folder(tmp_path, [to_line(r) for r in (started(repeats=2), *rows)])
    assert run.setup_rows() == [
        {"setup": "bge-small-128 #1", "status": "ok",
         "metrics": "texts_per_s=2000 texts/s, p50_ms=2 ms, p99_ms=6 ms, peak_mem_gib=1.5 GiB"},
        {"setup": "bge-small-128 #2", "status": "error", "metrics": error[:120]},
        {"setup": "bge-base-128 #1", "status": "skipped", "metrics": ""}]
    assert run.setup_counts() == (1, 3)  # setups of the plan, not repeats
    bare, _ = folder(tmp_path / "bare", [to_line(r) for r in rows])  # not even a run_started
    assert bare.setup_counts() == (1, 2)


def test_a_summary_row_and_the_launchers_own_records_beside_it(tmp_path):
    ok = [result("bge-small-128")]
    extra = result("launch", value=9.0)  # a record of a setup the summary does not cover (first-matmul's own)
    run, _ = folder(tmp_path, [to_line(r) for r in (*ok, finished(ok, setups=["bge-small-128"]), extra)])
    assert [row["setup"] for row in run.setup_rows()] == ["bge-small-128", "launch #1"]
    assert run.setup_counts() == (1, 1)


def test_records_are_not_echoed_to_a_terminal_and_a_closed_folder_holds_no_files_open(tmp_path, monkeypatch):
    class Terminal(io.StringIO):  # stdout as a person's terminal: the live view shows the records there
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    open_files = len(os.listdir("/proc/self/fd"))
    run, _ = folder(tmp_path, [to_line(started()), "text"])
    assert (run.path / "results.jsonl").read_text().count("\n") == 1 and sys.stdout.getvalue() == ""
    run.close()
    assert len(os.listdir("/proc/self/fd")) == open_files


def test_nothing_launched_leaves_no_folder(tmp_path):
    run, _ = folder(tmp_path, ["some text"])
    run.discard()
    assert not run.path.exists() and (tmp_path / "results").is_dir()
    run.discard()  # again: nothing left to remove, no error


def test_the_folder_is_uploaded_or_kept(tmp_path, s3, s3_bucket, s3_env, capsys, monkeypatch):
    ok = [result(s) for s in SETUPS]
    run, _ = folder(tmp_path, [to_line(r) for r in (started(), *ok, finished(ok))])
    assert asyncio.run(run.store(None)) == (str(run.path), True)
    run, _ = folder(tmp_path / "up", [to_line(r) for r in (started(), *ok, finished(ok))])
    where, stored = asyncio.run(run.store(S3Store(bucket=s3_bucket, prefix="p")))
    assert (where, stored) == (f"s3://{s3_bucket}/p/{RUN_ID}/", True)
    listed = s3.client().list_objects_v2(Bucket=s3_bucket, Prefix=f"p/{RUN_ID}/")
    assert {o["Key"].rsplit("/", 1)[1] for o in listed["Contents"]} >= {"results.jsonl", "config.json", "run.log"}
    assert (run.path / "results.jsonl").read_text().count("\n") == 5  # closed before it was sent: all of it
    capsys.readouterr()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # no credentials now: the upload fails
        monkeypatch.delenv(name)
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(name, str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    run, _ = folder(tmp_path / "kept", ["text"])
    where, stored = asyncio.run(run.store(S3Store(bucket=s3_bucket, prefix=SECRET)))
    assert (where, stored) == (str(run.path), False)
    said = capsys.readouterr().err
    assert f"gpubench-launch: [{RUN_ID}] " in said and f"kept {run.path}" in said.replace("\n", "")
    assert SECRET not in said and "***" in said


def test_an_outcome_starts_as_launched_with_nothing_known():
    outcome = RunOutcome(run_id=RUN_ID, exit_code=0, status="succeeded")
    assert (outcome.gpu, outcome.region, outcome.cost_usd, outcome.duration_s, outcome.setups_ok,
            outcome.setups_total, outcome.stored, outcome.message, outcome.launched, outcome.setups) == (
        None, None, None, 0.0, 0, 0, None, "", True, [])
    assert RunOutcome(run_id="b", exit_code=1, status="x").setups is not outcome.setups
