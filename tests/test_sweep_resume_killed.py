"""The launcher killed (SIGKILL) in the middle of a sweep, then the same call again: the jobs it left are
followed, not submitted again (no cell paid twice), every cell ends stored once and complete, and nothing
is left running on the fake."""

from __future__ import annotations

import os
import signal

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
from test_launch_support import launcher_process, wait_for

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env
GPUS = ["L40S", "RTX5090"]


def kill_mid_sweep(fake, args: list[str], env: dict, cwd) -> None:
    """`gpubench-launch ARGS` as a process, SIGKILLed once both its jobs run."""
    proc = launcher_process(args, env, cwd)
    try:
        wait_for(lambda: len(fake.jobs) == 2 and all(j.status == "running" for j in fake.jobs.values()),
                 timeout_s=60, what="both jobs running")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_killed_mid_sweep_then_resumed(fake, launcher_env, s3, s3_bucket, s3_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN + ["--repeats", "2"])]))
    store = f"s3://{s3_bucket}/s"
    kill_mid_sweep(fake, ["sweep", plan, "--store", store], {**launcher_env, **s3_env}, tmp_path)
    first_jobs = {j.id: j.spec.tags["gpubench_run_id"] for j in fake.jobs.values()}
    assert stored_runs(s3, s3_bucket, "s") == {}  # killed before anything was stored
    assert live_jobs(fake)  # still running without a launcher

    resumed = sweep(capsys, plan, "--store", store)
    assert resumed.code == exit_codes.OK, resumed.stderr
    assert len(submits(fake)) == 2 and set(fake.jobs) == set(first_jobs)  # nothing submitted again
    assert "followed again" in resumed.stderr

    runs = stored_runs(s3, s3_bucket, "s")
    assert sorted(folder.split("/")[2] for folder in runs) == sorted(GPUS)  # one run per cell
    assert {folder.rsplit("/", 1)[1] for folder in runs} == set(first_jobs.values())  # the first call's runs
    for files in runs.values():
        assert finished(files) == "ok"
        results = [line for line in files["results.jsonl"].splitlines() if '"kind":"result"' in line]
        assert len(results) == 2  # both repeats, each once: the log read again from its start, not doubled
    [sweep_id] = {s["tags"]["gpubench_sweep"] for s in submits(fake)}
    summary = summary_object(s3, s3_bucket, f"s/{sweep_id}/sweep.json")
    assert [c["state"] for c in summary["cells"]] == ["done", "done"]
    assert not live_jobs(fake) and not fake.instances

    again = sweep(capsys, plan, "--store", store)
    assert again.code == exit_codes.OK and len(submits(fake)) == 2


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_killed_then_cleaned_up_then_resumed(fake, launcher_env, capsys, tmp_path):
    """`gpubench-launch cleanup` after the kill cancels the orphaned jobs: the resumed sweep runs those cells again
    (a cancelled job is not followed), and ends complete."""
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN + ["--repeats", "3"])]))
    kill_mid_sweep(fake, ["sweep", plan], launcher_env, tmp_path)
    cleaned = support.launch(capsys, "cleanup")
    assert cleaned.code == exit_codes.OK, cleaned.stdout + cleaned.stderr
    assert {j.status for j in fake.jobs.values()} == {"cancelled"}

    resumed = sweep(capsys, plan)
    assert resumed.code == exit_codes.OK, resumed.stderr
    assert len(submits(fake)) == 4 and not live_jobs(fake)
    assert "followed again" not in resumed.stderr


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_killed_then_resumed_with_the_local_folder_as_store(fake, launcher_env, capsys, tmp_path):
    """Without --store the killed launcher's partial run folders are on disk; they are not taken for ended runs:
    the jobs are followed again, and each folder ends complete with its records once."""
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN + ["--repeats", "2"])]))
    kill_mid_sweep(fake, ["sweep", plan], launcher_env, tmp_path)
    resumed = sweep(capsys, plan)
    assert resumed.code == exit_codes.OK, resumed.stderr
    assert len(submits(fake)) == 2 and "followed again" in resumed.stderr and not live_jobs(fake)
    folders = sorted(p.parent for p in (tmp_path / "gpubench-results").rglob("results.jsonl"))
    assert {f.name for f in folders} == {j.spec.tags["gpubench_run_id"] for j in fake.jobs.values()}
    for folder in folders:
        files = {"results.jsonl": (folder / "results.jsonl").read_text()}
        assert finished(files) == "ok"
        assert files["results.jsonl"].count('"kind":"result"') == 2
