"""Ctrl-C in the middle of a sweep: every job is cancelled and confirmed stopped, what arrived is stored, the
summary says interrupted (exit 130); the same call again runs those cells to the end."""

from __future__ import annotations

import json
import signal

import pytest
import test_launch_support as support
from sweep_support import SLOW, TRAIN, live_jobs, plan_text, submits, sweep, write_plan
from test_launch_support import launcher_process, wait_for

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_ctrl_c_then_the_same_call_again(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S", "RTX5090"], TRAIN + ["--repeats", "3"])]))
    proc = launcher_process(["sweep", plan], launcher_env, tmp_path)
    try:
        wait_for(lambda: len(fake.jobs) == 2 and all(j.status == "running" for j in fake.jobs.values()),
                 timeout_s=60, what="both jobs running")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_codes.INTERRUPTED, stderr
    assert not live_jobs(fake) and {j.status for j in fake.jobs.values()} == {"cancelled"}
    [summary_file] = (tmp_path / "gpubench-results").glob("*/sweep.json")
    assert [c["state"] for c in json.loads(summary_file.read_text())["cells"]] == ["interrupted", "interrupted"]

    again = sweep(capsys, plan)
    assert again.code == exit_codes.OK, again.stderr
    assert len(submits(fake)) == 4 and not live_jobs(fake)
    assert [c["state"] for c in json.loads(summary_file.read_text())["cells"]] == ["done", "done"]
