"""A launcher killed mid-run and asked again with `gpubench-launch status RUN` once the job ended:
the job's results.jsonl artifact is merged into the local folder, every record once, and it says
where each came from."""

from __future__ import annotations

import json
import signal

import pytest
import test_launch_support as support
from artifact_job import artifact_job
from test_launch_support import launcher_process, read_until, wait_for

fake, launcher_env = support.fake, support.launcher_env


def kinds_of(lines):
    return [(r["kind"], r.get("setup")) for r in map(json.loads, lines)]


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_killed_launcher_is_completed_from_artifacts(fake, launcher_env, tmp_path):
    proc = launcher_process(["train-compile", "--gpu", "L40S", "--smoke", "--job-command",
                             artifact_job(sleep_s=0.7)], launcher_env, tmp_path)
    got = read_until(proc.stdout, lambda line: '"kind":"result"' in line)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    run_id = json.loads(got[0])["run_id"]
    folder = tmp_path / "gpubench-results" / run_id
    before = (folder / "results.jsonl").read_text().splitlines()
    assert ("run_finished", None) not in kinds_of(before)  # it died with records still to come

    [job] = fake.jobs.values()
    wait_for(lambda: job.status == "succeeded", what="the job to end on its own")
    status = launcher_process(["status", run_id], launcher_env, tmp_path)
    out, err = status.communicate(timeout=60)
    assert status.returncode == 0, err
    assert "recovered from the job's artifacts" in out

    after = (folder / "results.jsonl").read_text().splitlines()
    expected = [("run_started", None)] + [(k, s) for s in "abc" for k in ("progress", "result")] + [
        ("run_finished", None)]
    assert sorted(kinds_of(after), key=str) == sorted(expected, key=str)  # every record, once
    assert after[:len(before)] == before  # what was streamed stays as it was
    facts = json.loads((folder / "job.json").read_text())
    counts = facts["record_counts"]
    assert counts["both"] == len(before) and counts["artifacts"] == len(expected) - len(before)
    assert counts["stream"] == 0
    assert {s["source"] for s in facts["record_sources"]} == {"both", "artifacts"}

    again = launcher_process(["status", run_id], launcher_env, tmp_path)
    again.communicate(timeout=60)
    assert (folder / "results.jsonl").read_text().splitlines() == after  # asking twice doubles nothing
