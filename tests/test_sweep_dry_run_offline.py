"""Without RUNCRATE_API_KEY (a fork's CI) the dry run still checks the plan and shows its matrix, says that GPU
names, prices and the cap were not checked, and sends nothing; a bad plan is still refused. A real sweep
without the key is refused in one line."""

from __future__ import annotations

import test_launch_support as support
from sweep_support import TRAIN, plan_text, sweep, write_plan

fake, launcher_env = support.fake, support.launcher_env


def test_offline_dry_run(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("RUNCRATE_API_KEY")
    plan = write_plan(tmp_path, plan_text([("train-compile", ["H100", "L40S"], TRAIN)]), "weekly.toml")
    result = sweep(capsys, plan, "--dry-run")
    assert result.code == 0, result.stderr
    assert "to launch     2 of 2 cells: costs unknown; max_usd $20" in result.stdout
    assert "not checked" in result.stdout and "dry run: nothing was launched" in result.stdout
    assert fake.requests == []

    bad = sweep(capsys, write_plan(tmp_path, plan_text([("train-compile", ["L40S"], TRAIN)], max_usd=-1)), "--dry-run")
    assert bad.code == 2 and "max_usd must be a positive number" in bad.stderr

    real = sweep(capsys, plan)
    assert real.code == 2 and real.stderr.count("\n") == 1 and "RUNCRATE_API_KEY is not set" in real.stderr
    assert fake.requests == []
