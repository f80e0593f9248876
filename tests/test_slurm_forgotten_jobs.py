"""A cluster that forgets ended jobs fast (MinJobAge=2, as many sites run it) and a launcher that polls slowly: once
squeue no longer lists a job, the exit file its batch script wrote says how it ended. A run that succeeded is ok
(exit 0), never "job running: exit code 0"; and a cell whose job finished while no launcher ran gets its job.json
from a later call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from datetime import datetime

from slurm_support import (
    PYTHON,
    finished,
    forgetful,
    launcher,
    launcher_process,
    plan_text,
    run_folders,
    slowly,
    slurm,
    sweep_jobs,
    write_plan,
)
from test_launch_support import wait_for

from gpubench import exit_codes

PID = os.getpid()
MATMUL = ["--smoke"]  # first-matmul's smoke run: about 10 s of a real `gpubench run` on this node

__all__ = ["forgetful", "slurm"]


def test_a_success_is_ok_after_squeue_forgot_the_job(forgetful, tmp_path):
    """The launcher polls every 20 s: the job ends and leaves squeue between two polls."""
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f"[slurm]\npython = {json.dumps(PYTHON)}\n[slurm.gpus]\nL40S = {{ partition = \"l40s\" }}\n")
    result = launcher(["run", "first-matmul", "--slurm", str(cluster), "--gpu", "L40S", *MATMUL], forgetful, tmp_path,
                      {"GPUBENCH_POLL_S": "20"})
    assert result.code == exit_codes.OK, result.stderr
    [run_id] = {r["run_id"] for r in result.records()}
    assert "job running" not in result.stderr and "job failed" not in result.stderr
    assert [r["status"] for r in result.records() if r["kind"] == "result"] == ["ok"]
    facts = json.loads((tmp_path / "gpubench-results" / run_id / "job.json").read_text())
    assert facts["state_from"] == "exit file (no longer in squeue)", facts
    assert (facts["state"], facts["status"], facts["exit_code"]) == ("COMPLETED", "succeeded", 0)
    assert facts["gpu_hours"] > 0 and datetime.fromisoformat(facts["started_at"]) < datetime.fromisoformat(
        facts["ended_at"])


def test_a_cell_that_ended_while_no_launcher_ran_gets_its_job_json(forgetful, tmp_path):
    """The launcher is killed once the job runs; the job ends and squeue forgets it; the same call again writes the
    cell's job.json from the exit file (its GPU-hours count under max_gpu_hours) and submits nothing."""
    name = f"unfollowed{PID}"
    plan = write_plan(tmp_path, plan_text(name, [("first-matmul", ["L40S"], MATMUL)]))
    root = tmp_path / "gpubench-results"
    proc = launcher_process(["sweep", plan], forgetful, tmp_path)
    try:
        wait_for(slowly(lambda: [j["state"] for j in sweep_jobs(forgetful, name)] == ["RUNNING"]), timeout_s=120,
                 what="the job running")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    wait_for(slowly(lambda: sweep_jobs(forgetful, name) == [], 1.0), timeout_s=180, what="squeue forgetting the job")
    [folder] = run_folders(root).values()
    assert finished(folder) == "ok" and not (folder / "job.json").exists()

    again = launcher(["sweep", plan], forgetful, tmp_path)
    assert again.code == exit_codes.OK, again.stderr
    assert "from an earlier call completed; its job.json is written" in again.stderr
    assert sweep_jobs(forgetful, name) == []  # nothing submitted again
    facts = json.loads((folder / "job.json").read_text())
    assert facts["state_from"] == "exit file (no longer in squeue)" and facts["status"] == "succeeded"
    assert facts["gpu_hours"] > 0 and facts["started_at"] and facts["settled_by_a_later_call"]
    assert (folder / f"slurm-{facts['job_id']}.out").is_file()  # the log moved beside the results
    summary = json.loads(next(root.glob(f"{name}-*/sweep.json")).read_text())
    assert [c["state"] for c in summary["cells"]] == ["done"]
    listed = subprocess.run(["squeue", "--noheader", "--states=all", f"--jobs={facts['job_id']}"],
                            env={**os.environ, **forgetful.env()}, capture_output=True, text=True)
    assert facts["job_id"] not in listed.stdout  # it really was forgotten: only the exit file could say
