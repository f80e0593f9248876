"""A plan whose worst case (each cell's safety net at its dearest region) is over max_usd is refused in one
line, exit 2, with nothing launched: the only request is the read of the prices. --dry-run shows the matrix
with each cell's expected and worst-case cost, the total, and the same refusal."""

from __future__ import annotations

import test_launch_support as support
from sweep_support import TRAIN, plan_text, sweep, write_plan

fake, launcher_env = support.fake, support.launcher_env

GPUS = ["H100", "L40S", "RTX5090"]
# 60-minute safety net: H100 $2.49 + L40S $0.89 (eu-west-1, the dearer region) + RTX5090 $0.69 = $4.07.
WORST = 4.07


def test_over_the_cap_launches_nothing(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN)], max_usd=4.0))
    result = sweep(capsys, plan)
    assert result.code == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"worst case ${WORST:.2f}" in result.stderr and "over max_usd $4" in result.stderr
    assert {(r.method, r.path) for r in fake.requests} == {("GET", "/api/v1/instances/types")}
    assert fake.jobs == {} and fake.instances == {}


def test_just_under_the_cap_dry_run_shows_costs(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN)], max_usd=4.07))
    result = sweep(capsys, plan, "--dry-run")
    assert result.code == 0, result.stderr
    rows = {line.split("│")[3].strip(): line for line in result.stdout.splitlines() if line.startswith("│")}
    # expected: the --smoke run's 2 expected minutes (not the study's 8) at the cheapest region; worst: 60 minutes
    # at the dearest.
    assert "2.49" in rows["H100"] and "0.08" in rows["H100"] and "2.49 │" in rows["H100"]
    assert "0.03" in rows["L40S"] and "0.89" in rows["L40S"]
    assert "3 of 3 cells: expected $0.13, at most $4.07; max_usd $4.07" in result.stdout
    assert "dry run: nothing was launched" in result.stdout
    assert {(r.method, r.path) for r in fake.requests} == {("GET", "/api/v1/instances/types")}


def test_dry_run_over_the_cap_shows_then_refuses(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN)], max_usd=1))
    result = sweep(capsys, plan, "--dry-run")
    assert result.code == 2
    assert "at most $4.07" in result.stdout and "over max_usd $1" in result.stderr
    assert fake.jobs == {}
