"""One job of a sweep fails (its machine dies mid-run): the other cell is stored complete, the failed one is
stored as it ended and reported in the summary; the same call again launches that cell only, and then
the sweep is whole."""

from __future__ import annotations

import json
import threading

import pytest
import test_launch_support as support
from sweep_support import (
    SLOW,
    TRAIN,
    finished,
    live_jobs,
    plan_text,
    stored_runs,
    submits,
    summary_object,
    sweep,
    write_plan,
)
from test_launch_support import wait_for

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_a_failed_job_is_reported_and_run_again_alone(fake, launcher_env, s3, s3_bucket, s3_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S", "RTX5090"], TRAIN)]))
    store = f"s3://{s3_bucket}/s"
    failed = {}

    def kill_rtx5090_machine():
        job = wait_for(lambda: next((j for j in fake.jobs.values() if j.attempt.gpu.gpu_type == "RTX5090"
                                     and j.status == "running"), None), timeout_s=60, what="RTX5090 running")
        fake.fail_machine(job.id)
        failed["id"] = job.id

    killer = threading.Thread(target=kill_rtx5090_machine, daemon=True)
    killer.start()
    first = sweep(capsys, plan, "--store", store)
    killer.join(timeout=10)
    assert first.code == exit_codes.JOB_NOT_SUCCEEDED, first.stderr
    assert fake.jobs[failed["id"]].status == "failed"

    runs = stored_runs(s3, s3_bucket, "s")
    by_gpu = {folder.split("/")[2]: files for folder, files in runs.items()}
    assert sorted(by_gpu) == ["L40S", "RTX5090"]
    assert finished(by_gpu["L40S"]) == "ok"
    assert finished(by_gpu["RTX5090"]) is None
    assert json.loads(by_gpu["RTX5090"]["job.json"])["status"] == "failed"
    [sweep_id] = {s["tags"]["gpubench_sweep"] for s in submits(fake)}
    summary = summary_object(s3, s3_bucket, f"s/{sweep_id}/sweep.json")
    assert {c["gpu"]: c["state"] for c in summary["cells"]} == {"L40S": "done", "RTX5090": "failed"}
    assert "missing: train-compile on RTX5090: failed" in first.stderr

    second = sweep(capsys, plan, "--store", store)
    assert second.code == exit_codes.OK, second.stderr
    sent = submits(fake)
    assert len(sent) == 3 and sent[-1]["gpu_type"] == ["RTX5090"]
    runs = stored_runs(s3, s3_bucket, "s")
    cells = {}
    for folder, files in runs.items():
        cells.setdefault(folder.split("/")[2], []).append(finished(files))
    assert cells["L40S"] == ["ok"]  # not run again
    assert sorted(map(str, cells["RTX5090"])) == ["None", "ok"]  # the failed attempt, then the complete one
    summary = summary_object(s3, s3_bucket, f"s/{sweep_id}/sweep.json")
    assert {c["gpu"]: c["state"] for c in summary["cells"]} == {"L40S": "done", "RTX5090": "done"}
    assert not live_jobs(fake)
