"""While a sweep runs, its max_usd holds over all its jobs together: a price raised after the plan was costed
(the job bills far more than the listed rate) stops the job at the cap, and the summary says so."""

from __future__ import annotations

import threading

import pytest
import test_launch_support as support
from sweep_support import SLOW, TRAIN, live_jobs, plan_text, submits, sweep, write_plan
from test_launch_support import wait_for

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_the_cap_stops_jobs_billing_over_it(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S"], TRAIN + ["--repeats", "3"])], max_usd=2.0))
    fake.inject("POST", "/api/v1/jobs", None, delay_s=1.0)  # time to change the price after it was read

    def raise_the_price():
        wait_for(lambda: any(r.path == "/api/v1/instances/types" for r in fake.requests), what="prices read")
        for row in fake.instance_types:
            if row["gpu_type"] == "L40S":
                row["hourly_rate"] = 300.0  # $1.67 per real second at 20 API seconds per second

    changer = threading.Thread(target=raise_the_price, daemon=True)
    changer.start()
    result = sweep(capsys, plan)
    changer.join(timeout=10)
    assert result.code == exit_codes.LIMIT_REACHED, result.stderr
    [job] = fake.jobs.values()
    assert job.status == "cancelled"
    assert len(submits(fake)) == 1 and not live_jobs(fake)
    assert "the sweep's cap $2 reached: cancelling the job" in result.stderr
    assert "missing: train-compile on L40S: stopped at the cap" in result.stderr
