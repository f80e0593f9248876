"""`gpubench-launch cleanup` after a crash: a launcher killed with SIGKILL leaves its job running;
cleanup finds it (no launcher attached) and stops it, and leaves a job whose launcher is alive."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, launcher_process, read_until

fake, launcher_env = support.fake, support.launcher_env


def start(tmp_path, launcher_env, name: str):
    folder = tmp_path / name
    folder.mkdir()
    proc = launcher_process(["train-compile", "--gpu", "L40S", "--job-command", emitter_command(hang_s=120)],
                            launcher_env, folder)
    first = read_until(proc.stdout, lambda line: '"kind":"run_started"' in line)[-1]
    return proc, json.loads(first)["run_id"]


def job_of(fake, run_id: str):
    [job] = [j for j in fake.jobs.values() if j.spec.tags.get("gpubench_run_id") == run_id]
    return job


@pytest.mark.parametrize("fake", [{"minute_s": 2.0}], indirect=True)
def test_cleanup_stops_orphans_only(fake, launcher_env, capsys, tmp_path):
    crashed, crashed_run = start(tmp_path, launcher_env, "a")
    alive, alive_run = start(tmp_path, launcher_env, "b")
    try:
        crashed.kill()
        crashed.wait(timeout=30)
        orphan, watched = job_of(fake, crashed_run), job_of(fake, alive_run)
        assert orphan.status == "running"

        listing = launch(capsys, "cleanup", "--dry-run")
        assert listing.code == 0, listing.stderr
        [orphan_line] = [line for line in listing.stdout.splitlines() if orphan.id in line]
        assert "would stop" in orphan_line
        [watched_line] = [line for line in listing.stdout.splitlines() if watched.id in line]
        assert "left alone: its launcher is running" in watched_line
        assert orphan.status == "running"

        done = launch(capsys, "cleanup")
        assert done.code == 0, done.stderr
        assert orphan.status == "cancelled"
        assert watched.status == "running"
        assert not (tmp_path / "state" / "launches" / f"{crashed_run}.json").exists()

        again = launch(capsys, "cleanup")
        assert orphan.id not in again.stdout and "left alone" in again.stdout
    finally:
        for proc in (crashed, alive):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
