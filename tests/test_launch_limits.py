"""--max-minutes and --max-cost: the launcher cancels the job when either is reached, says so, stores
what arrived, and exits 4."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders

fake, launcher_env = support.fake, support.launcher_env


# An API minute lasts 1 s here, so the job's own 3-minute safety net does not fire first.
@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_max_minutes_cancels(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--max-minutes", "0.02",
                    "--job-command", emitter_command(hang_s=120))
    assert result.code == 4, result.stderr
    assert "--max-minutes 0.02 reached: cancelling the job" in result.stderr
    [job] = fake.jobs.values()
    assert job.status == "cancelled"
    [folder] = run_folders(tmp_path)
    facts = json.loads((folder / "job.json").read_text())
    assert facts["stopped_by"] == "max-minutes" and facts["cancel_confirmed"] is True
    # The safety net is never far above the user's limit: ceil(0.02) + 2 minutes.
    [submit] = [r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]
    assert json.loads(submit.body)["max_runtime_minutes"] == 3


@pytest.mark.parametrize("fake", [{"minute_s": 0.2}], indirect=True)
def test_max_cost_cancels(fake, launcher_env, capsys, tmp_path):
    # The fake's clock runs 300x: an L40S ($0.86/h) costs about $0.07 per real second.
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--max-cost", "0.05",
                    "--job-command", emitter_command(hang_s=120))
    assert result.code == 4, result.stderr
    assert "--max-cost $0.05 reached" in result.stderr
    [job] = fake.jobs.values()
    assert job.status == "cancelled"
    [folder] = run_folders(tmp_path)
    facts = json.loads((folder / "job.json").read_text())
    assert facts["stopped_by"] == "max-cost" and facts["cost_usd"] >= 0.05
    assert len((folder / "results.jsonl").read_text().splitlines()) >= 1
