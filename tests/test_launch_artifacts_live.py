"""While the launcher runs: when the job's log stream is lost for good (the follow keeps failing, or
never comes back) or the log was cut, the records come from the job's results.jsonl artifact,
merged with what was streamed: none lost, none doubled, and job.json says where each came from."""

from __future__ import annotations

import json
import threading

import pytest
import test_launch_support as support
from artifact_job import artifact_job
from test_launch_support import launch, run_folders

fake, launcher_env = support.fake, support.launcher_env

LOGS = r"/api/v1/jobs/[^/]+/logs"
EXPECTED = sorted([("run_started", None)] + [(k, s) for s in "abc" for k in ("progress", "result")]
                  + [("run_finished", None)], key=str)


def check_merged(tmp_path, result) -> dict:
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    lines = (folder / "results.jsonl").read_text().splitlines()
    got = sorted(((r["kind"], r.get("setup")) for r in map(json.loads, lines)), key=str)
    assert got == EXPECTED  # every record, once
    facts = json.loads((folder / "job.json").read_text())
    assert facts["recovered_from"].endswith("/results.jsonl")
    counts = facts["record_counts"]
    assert counts["stream"] == 0 and counts["both"] + counts["artifacts"] == len(EXPECTED)
    assert "recovered from the job's artifacts" in result.stderr  # the summary says so
    assert {r["setup"] for r in result.records() if r["kind"] == "result"} == set("abc")  # echoed too
    return counts


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_follow_that_keeps_failing(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_LOST_AFTER_S", "0.5")
    fake.inject("GET", LOGS, 500, times=None, headers={"Retry-After": "0"})
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command", artifact_job(sleep_s=0.3))
    counts = check_merged(tmp_path, result)
    assert counts["artifacts"] == len(EXPECTED)  # nothing came through the stream


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_follow_that_never_comes_back(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_DRAIN_TIMEOUT_S", "1")

    def hang_after_first_record():
        support.wait_for(lambda: any(b'"kind":"run_started"' in _output(j) for j in fake.jobs.values()),
                         what="the first record")
        fake.inject("GET", LOGS, None, times=None, delay_s=6.0)

    threading.Thread(target=hang_after_first_record, daemon=True).start()
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command", artifact_job(sleep_s=0.5))
    fake.clear_faults()
    check_merged(tmp_path, result)


@pytest.mark.parametrize("fake", [{"minute_s": 4.0, "log_cap_bytes": 6000}], indirect=True)
def test_job_whose_log_is_cut(fake, launcher_env, capsys, tmp_path):
    go = tmp_path / "go"

    def cut_while_unread():
        # The launcher has streamed the log's head; then it reads nothing until the job has written the rest, whose
        # middle the cap drops, however fast or slow either side runs.
        try:
            support.wait_for(lambda: any(b'"kind":"run_started"' in path.read_bytes()
                                         for path in tmp_path.glob("gpubench-results/*/results.jsonl")),
                             timeout_s=120, what="the streamed head")
            fake.inject("GET", LOGS, 500, times=None, headers={"Retry-After": "0"})
            go.touch()
            support.wait_for(lambda: fake.jobs and all(j.logs.ended for j in fake.jobs.values()), timeout_s=120,
                             what="the job's end")
        finally:
            fake.clear_faults()
            go.touch()

    threading.Thread(target=cut_while_unread, daemon=True).start()
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command",
                    artifact_job(sleep_s=0.2, pad_lines=40, wait_for=str(go)))
    counts = check_merged(tmp_path, result)
    assert counts["artifacts"] >= 1 and counts["both"] >= 1  # the middle came from the artifact
    [folder] = run_folders(tmp_path)
    assert json.loads((folder / "job.json").read_text())["follow"]["truncated"] is True


def _output(job) -> bytes:
    page = job.logs.page(0, 10000)
    return "".join(c.text for c in page.chunks).encode()
