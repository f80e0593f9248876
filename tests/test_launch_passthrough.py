"""`gpubench-launch` passes --set, --weights and --price through to the job's `gpubench run`: the real run
behind the fake records the overridden config and the price given, so a local run can be reproduced remotely."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import launch, run_folders

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", [{"minute_s": 2.0}], indirect=True)
def test_set_weights_and_price_reach_the_job(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "run", "first-matmul", "--via", "job", "--gpu", "L40S", "--smoke",
                    "--set", "size=96", "--weights", "random", "--price", "1.5")
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    assert "--set size=96" in config["command"] and "--weights random" in config["command"]
    started = [r for r in result.records() if r["kind"] == "run_started"][0]
    assert started["config"]["size"] == 96  # the override, over the smoke size (256)
    assert started["price_usd_per_hour"] == 1.5  # not L40S's $0.86


def test_a_malformed_set_launches_nothing(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--set", "steps", "--dry-run")
    assert result.code == 2
    assert "bad --set 'steps'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert all(r.path == "/api/v1/instances/types" for r in fake.requests)
