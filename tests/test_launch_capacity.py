"""Repeated --gpu without --each is one job with an ordered candidate list: a type with no capacity
is passed over for the next, and the job facts say which GPU the run got."""

from __future__ import annotations

import json

import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders

fake, launcher_env = support.fake, support.launcher_env


def test_falls_back_to_the_next_candidate(fake, launcher_env, capsys, tmp_path):
    fake.set_capacity("RTX5090", False)
    result = launch(capsys, "train-compile", "--gpu", "RTX5090", "--gpu", "L40S", "--job-command", emitter_command())
    assert result.code == 0, result.stderr
    [job] = fake.jobs.values()
    assert job.status == "succeeded"
    [folder] = run_folders(tmp_path)
    facts = json.loads((folder / "job.json").read_text())
    assert facts["gpu_requested"] == ["RTX5090", "L40S"]
    assert facts["gpu_type"] == "L40S" and facts["cost_per_hour"] == 0.86
    assert "L40S" in result.stderr.split("summary")[1]


def test_no_capacity_anywhere_is_a_failed_job(fake, launcher_env, capsys):
    fake.set_capacity("A4000", False)
    result = launch(capsys, "train-compile", "--gpu", "A4000", "--capacity-wait", "1",
                    "--job-command", emitter_command())
    assert result.code == 3, result.stderr
    [job] = fake.jobs.values()
    assert job.status == "failed" and job.started_at is None
    assert "job failed" in result.stderr
