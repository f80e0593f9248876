"""A submit whose answer is lost (500 or a dropped connection after the job was created) is sent
again with the same Idempotency-Key: exactly one job exists, and the run completes."""

from __future__ import annotations

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fault", [
    {"status": 500, "after_action": True},
    {"status": None, "drop": True, "after_action": True},
    {"status": 409, "details": {"reason": "idempotency_in_progress"}, "delay_s": 0.0},
])
def test_one_job_after_a_lost_submit_answer(fake, launcher_env, capsys, fault):
    fake.inject("POST", r"/api/v1/jobs", fault.pop("status"), **fault)
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", emitter_command())
    assert result.code == 0, result.stderr
    assert len(fake.jobs) == 1
    submits = [r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]
    assert len(submits) == 2 and len({r.headers["idempotency-key"] for r in submits}) == 1
