"""A sweep's cells that ask the scheduler for the same thing go in as one job array (`sbatch --array=0-N%T`, one
task per cell), against the real controller: one task cancelled by hand is that cell's failure and the same call
again submits only it; one squeue call per poll follows all the tasks; a double Ctrl-C names the tasks to scancel."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from slurm_support import (
    SLOW_MATMUL,
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

PID = os.getpid()
# "CPU" stands for a GPU type whose partition is the GPU (no gres): each task takes one of the node's 2 CPUs.
CPU = {"CPU": 'partition = "h100", gres = ""'}
CELLS = [("first-matmul", ["CPU"], ["--smoke", "--repeats", str(n)]) for n in (1, 2, 3, 4)]

__all__ = ["slurm"]


def _summary(root, name: str) -> dict:
    return json.loads(next(root.glob(f"{name}-*/sweep.json")).read_text())


def _squeue_counter(tmp_path) -> tuple[dict[str, str], object]:
    """squeue on PATH as a wrapper that logs each call and runs the real one."""
    import shutil

    bin_dir, log = tmp_path / "bin", tmp_path / "squeue.log"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec {shutil.which('squeue')} \"$@\"\n")
    (bin_dir / "squeue").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}, log


def test_four_cells_are_one_array_and_a_cancelled_task_is_run_again(slurm, tmp_path):
    name = f"array{PID}"
    plan = write_plan(tmp_path, plan_text(name, CELLS, CPU, extra="array_throttle = 2"))
    root = tmp_path / "gpubench-results"
    dry = launcher(["sweep", plan, "--dry-run"], slurm, tmp_path)
    assert dry.code == exit_codes.OK, dry.stderr
    out = " ".join(dry.stdout.split())
    assert "array of 4 (at most 2 at once):" in out and "--array=0-3%2" in out
    assert "to submit 4 of 4 cells in 1 array job" in out
    assert not root.exists()

    path, log = _squeue_counter(tmp_path)
    started = time.monotonic()
    proc = launcher_process(["sweep", plan], slurm, tmp_path, path)
    try:  # the throttle holds tasks 2 and 3 while 0 and 1 run: cancel task 3 before it starts
        jobs = wait_for(slowly(lambda: (j := sweep_jobs(slurm, name)) and len(j) == 4 and j), timeout_s=120,
                        what="the array's 4 tasks")
        array = {j["id"].split("_")[0] for j in jobs}
        assert len(array) == 1, jobs  # one sbatch for the four cells
        [array_id] = array
        subprocess.run(["scancel", f"{array_id}_3"], env={**os.environ, **slurm.env()}, check=True)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - started
    assert proc.returncode == exit_codes.JOB_NOT_SUCCEEDED, err
    assert f"slurm job {array_id}_0 submitted (task 0 of array {array_id}, partition h100" in err
    assert "job cancelled: cancelled before it started (scancel)" in err
    cells = {c["args"][-1]: c for c in _summary(root, name)["cells"]}
    assert {n: c["state"] for n, c in cells.items()} == {"1": "done", "2": "done", "3": "done", "4": "cancelled"}
    facts = [json.loads(f.read_text()) for f in root.glob(f"{name}-*/*/*/*/*/job.json")]
    jobs = {j["array_task"]: j for j in facts}
    assert sorted(jobs) == [0, 1, 2, 3] and {j["array_job_id"] for j in facts} == {array_id}
    assert jobs[3]["state"] == "CANCELLED" and jobs[3]["started_at"] is None and jobs[3]["gpu_hours"] == 0
    assert len(run_folders(root)) == 3  # the cancelled task never ran
    # One squeue call per poll for all four tasks (GPUBENCH_POLL_S=0.5: a poll at most every 0.4 s), not one each.
    calls = log.read_text().splitlines()
    assert all("--name=" in call for call in calls)
    assert len(calls) <= elapsed / 0.4 + 4, (len(calls), elapsed)

    again = launcher(["sweep", plan], slurm, tmp_path)
    assert again.code == exit_codes.OK, again.stderr
    assert again.stderr.count(": done (stored run ") == 3
    resumed = [j for j in sweep_jobs(slurm, name) if not j["id"].startswith(f"{array_id}_")]
    assert len(resumed) == 1 and resumed[0]["state"] == "COMPLETED"  # only the cancelled cell, as an array of 1
    assert {c["state"] for c in _summary(root, name)["cells"]} == {"done"}


def test_a_double_ctrl_c_names_the_tasks_to_scancel(slurm, tmp_path):
    """The second Ctrl-C quits at once; for a cluster's jobs the way to stop them is scancel, not the Runcrate
    cleanup, and what it prints does stop them."""
    import threading

    name = f"twice{PID}"
    cells = [("first-matmul", ["CPU"], [*SLOW_MATMUL[:-1], str(n)]) for n in (10, 11, 12)]  # long: still running
    proc = launcher_process(["sweep", write_plan(tmp_path, plan_text(name, cells, CPU))], slurm, tmp_path)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        jobs = wait_for(slowly(lambda: (j := sweep_jobs(slurm, name)) and len(j) == 3 and j), timeout_s=120,
                        what="the array's 3 tasks")
        wait_for(lambda: sum("submitted (task" in ln for ln in lines) == 3, timeout_s=60, what="3 tasks followed")
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: any("SIGINT: cancelling" in ln for ln in lines), timeout_s=30, what="the first Ctrl-C")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(lines)
    assert proc.returncode == exit_codes.INTERRUPTED, err
    assert "gpubench-launch cleanup" not in err, err
    [command] = re.findall(r"Stop them with: (scancel [0-9_ ]+)$", err, re.MULTILINE)
    printed = command.split()[1:]  # every task it followed (the first Ctrl-C may have cancelled a waiting one)
    assert len(printed) == 3 and {i.split("_")[0] for i in printed} == {j["id"].split("_")[0] for j in jobs}
    assert {j["id"] for j in live(sweep_jobs(slurm, name))} <= set(printed)
    subprocess.run(command.split(), env={**os.environ, **slurm.env()}, check=True)
    wait_for(slowly(lambda: live(sweep_jobs(slurm, name)) == []), timeout_s=60, what="no task left")


def test_a_cancelled_task_a_killed_launcher_left_is_recorded_and_replaced(slurm, tmp_path):
    """The launcher is killed, then its array is cancelled by hand: the same call again writes each task's job.json
    (cancelled, no GPU-hours for the one that never ran) and submits the cells again, saying so."""
    name = f"replaced{PID}"
    plan = write_plan(tmp_path, plan_text(name, CELLS[:2], CPU, extra="array_throttle = 1"))
    root = tmp_path / "gpubench-results"
    proc = launcher_process(["sweep", plan], slurm, tmp_path)
    try:
        jobs = wait_for(slowly(lambda: (j := sweep_jobs(slurm, name)) and len(j) == 2 and j), timeout_s=120,
                        what="the array's 2 tasks")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    [array_id] = {j["id"].split("_")[0] for j in jobs}
    subprocess.run(["scancel", array_id], env={**os.environ, **slurm.env()}, check=True)
    wait_for(slowly(lambda: live(sweep_jobs(slurm, name)) == []), timeout_s=60, what="the array cancelled")

    again = launcher(["sweep", plan], slurm, tmp_path)
    assert again.code == exit_codes.OK, again.stderr
    assert (f"slurm job {array_id}_1 from an earlier call cancelled: cancelled before it started (scancel); its"
            " job.json is written; submitting the cell again") in again.stderr
    old = [json.loads(f.read_text()) for f in root.glob(f"{name}-*/*/*/*/*/job.json")
           if json.loads(f.read_text())["array_job_id"] == array_id]
    assert len(old) == 2 and {f["state"] for f in old} == {"CANCELLED"} and all(f["settled_by_a_later_call"]
                                                                              for f in old)
    cells = _summary(root, name)["cells"]
    assert [c["state"] for c in cells] == ["done", "done"]
    assert all(c["note"].startswith(f"replaces slurm job {array_id}_") for c in cells), cells
