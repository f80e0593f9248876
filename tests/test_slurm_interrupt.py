"""Stopping a Slurm sweep midway, against the real controller: the launcher killed (SIGKILL) and called again
follows the same jobs (none submitted twice, nothing measured lost); Ctrl-C cancels what the call submitted
(nothing left in squeue) and keeps what the runs had measured."""

from __future__ import annotations

import json
import os
import signal

from slurm_support import (
    SLOW_MATMUL,
    SLOW_REPEATS,
    TRAIN,
    finished,
    launcher,
    launcher_process,
    live,
    plan_text,
    run_folders,
    slowly,
    slurm,
    sweep_jobs,
    write_plan,
)
from test_launch_support import wait_for

from gpubench import exit_codes

PID = os.getpid()  # in each plan's name: a sweep's jobs are found by its id, and squeue keeps ended ones a while

__all__ = ["slurm"]


def _results(folder) -> list[dict]:
    path = folder / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _running_with_a_result(cluster, name: str, root, count: int) -> bool:
    jobs = sweep_jobs(cluster, name)
    if len(jobs) != count or any(j["state"] != "RUNNING" for j in jobs):
        return False
    folders = list(root.glob("*/*/*/*/*/results.jsonl"))
    return len(folders) == count and all(any(r["kind"] == "result" for r in _results(f.parent)) for f in folders)


def test_killed_launcher_then_resumed(slurm, tmp_path):
    plan = write_plan(tmp_path, plan_text(f"killed{PID}", [("first-matmul", ["H100", "L40S"], SLOW_MATMUL)]))
    root = tmp_path / "gpubench-results"
    proc = launcher_process(["sweep", plan], slurm, tmp_path)
    try:
        wait_for(slowly(lambda: _running_with_a_result(slurm, f"killed{PID}", root, 2)), timeout_s=300,
                 what="both jobs running, each with a result")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    first = {j["id"] for j in sweep_jobs(slurm, f"killed{PID}")}
    assert len(live(sweep_jobs(slurm, f"killed{PID}"))) == 2  # the jobs run on without a launcher

    resumed = launcher(["sweep", plan], slurm, tmp_path)
    assert resumed.code == exit_codes.OK, resumed.stderr
    assert {j["id"] for j in sweep_jobs(slurm, f"killed{PID}")} == first  # followed, not submitted again
    assert resumed.stderr.count("followed again") == 2
    folders = run_folders(root)
    assert len(folders) == 2
    for folder in folders.values():
        assert finished(folder) == "ok"
        results = [r for r in _results(folder) if r["kind"] == "result"]
        assert len(results) == SLOW_REPEATS  # every repeat once: nothing lost, nothing doubled
        assert json.loads((folder / "job.json").read_text())["job_id"] in first
    # What the resumed call streamed is the whole run, from the job's output file.
    assert sum(r["kind"] == "result" for r in resumed.records()) == 2 * SLOW_REPEATS


def test_ctrl_c_cancels_the_jobs_and_keeps_what_was_measured(slurm, tmp_path):
    plan = write_plan(tmp_path, plan_text(f"ctrlc{PID}", [("first-matmul", ["H100", "L40S"], SLOW_MATMUL),
                                                     ("train-compile", ["H100"], TRAIN)]))
    root = tmp_path / "gpubench-results"
    proc = launcher_process(["sweep", plan], slurm, tmp_path)
    try:
        # Two jobs running with a result each; the third waits behind them for the H100 gres.
        wait_for(slowly(lambda: len(sweep_jobs(slurm, f"ctrlc{PID}")) == 3 and len(
            [f for f in root.glob("*/*/*/*/*/results.jsonl") if any(r["kind"] == "result" for r in _results(f.parent))]
        ) >= 2), timeout_s=300, what="two jobs with a result")
        # On busy cores a run can end before the signal: the ones still measuring now are the ones it must stop.
        midway = [f for f in run_folders(root).values()
                  if finished(f) is None and any(r["kind"] == "result" for r in _results(f))]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_codes.INTERRUPTED, err
    assert live(sweep_jobs(slurm, f"ctrlc{PID}")) == []  # nothing left running or waiting
    # The two H100 cells were one array (the second task waiting for the gres), the L40S cell another; every task's
    # job.json says this call stopped it, the waiting one before it started.
    facts = {f.parent: json.loads(f.read_text()) for f in root.glob("*/*/*/*/*/job.json")}
    assert sorted(f["array_task"] for f in facts.values()) == [0, 0, 1]
    assert len({f["array_job_id"] for f in facts.values()}) == 2
    for folder, f in facts.items():  # (on busy cores a run can end before the signal: it was not stopped)
        ended_ok = (folder / "results.jsonl").exists() and finished(folder) == "ok"
        assert f["stopped_by"] == "interrupt" or ended_ok, (folder, f)
    facts = list(facts.values())
    assert all(f["state"] == "CANCELLED" and f["error"] == "cancelled before it started (scancel)"
               for f in facts if f["started_at"] is None)
    states = sorted(j["state"] for j in sweep_jobs(slurm, f"ctrlc{PID}"))
    # scancel's SIGINT ends a running job with the run's interrupted exit (FAILED), a waiting one is CANCELLED:
    # at least one job was stopped by this call rather than left to finish
    assert any(s in ("CANCELLED", "FAILED") for s in states), states
    measured = [f for f in run_folders(root).values() if any(r["kind"] == "result" for r in _results(f))]
    assert len(measured) >= 2
    assert midway, "no run was still measuring when Ctrl-C was sent"
    for folder in midway:  # the run inside got SIGINT: it recorded that it was interrupted, and what it measured
        assert finished(folder) == "interrupted"
    assert all(finished(f) in ("ok", "interrupted") for f in measured)
    summary = json.loads(next(root.glob(f"ctrlc{PID}-*/sweep.json")).read_text())
    assert {c["state"] for c in summary["cells"]} <= {"interrupted", "done"}
