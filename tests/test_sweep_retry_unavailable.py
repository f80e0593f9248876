"""A cell whose GPU type had no capacity is not launched again by the same call (it is reported); once the
type is back, --retry-unavailable launches that cell alone."""

from __future__ import annotations

import pytest
import test_launch_support as support
from sweep_support import SLOW, TRAIN, plan_text, submits, sweep, write_plan

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_retry_unavailable_launches_only_that_cell(fake, launcher_env, capsys, tmp_path):
    fake.set_capacity("RTX5090", False)
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S", "RTX5090"], TRAIN)]))
    assert sweep(capsys, plan).code == exit_codes.JOB_NOT_SUCCEEDED
    assert len(submits(fake)) == 2

    fake.set_capacity("RTX5090", True)
    again = sweep(capsys, plan)  # local results folder as the store
    assert again.code == exit_codes.JOB_NOT_SUCCEEDED and len(submits(fake)) == 2
    assert "--retry-unavailable tries again" in again.stderr

    retried = sweep(capsys, plan, "--retry-unavailable")
    assert retried.code == exit_codes.OK, retried.stderr
    sent = submits(fake)
    assert len(sent) == 3 and sent[-1]["gpu_type"] == ["RTX5090"]
    assert "missing:" not in retried.stderr
