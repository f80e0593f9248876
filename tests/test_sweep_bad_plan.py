"""A bad plan is refused in one line (exit 2) before any request: a TOML syntax error, a missing or negative
cap, an empty matrix, an unknown workload or argument, a --set the job's own `gpubench run` refuses: the fake
sees nothing. An unknown GPU needs the API's list of types to be known as such: one read of /instances/types,
nothing submitted."""

from __future__ import annotations

import pytest
import test_launch_support as support
from sweep_support import TRAIN, plan_text, sweep, write_plan

fake, launcher_env = support.fake, support.launcher_env

CELL = [("train-compile", ["L40S"], TRAIN)]
BAD = {
    "toml syntax": ("max_usd = 20.0\n[[cell]\nworkload = 'train-compile'\n", "TOML syntax error"),
    "missing cap": (plan_text(CELL, max_usd=None), "max_usd is missing"),
    "negative cap": (plan_text(CELL, max_usd=-5), "max_usd must be a positive number"),
    "cap as text": (plan_text(CELL, max_usd='"20"'), "max_usd must be a positive number"),
    "cap not finite": (plan_text(CELL, max_usd="inf"), "max_usd must be a positive number of dollars, not inf"),
    "wait as a fraction": (plan_text(CELL, extra="capacity_wait_minutes = 1.5\n"),
                           "capacity_wait_minutes must be a whole number from 0 to 1440"),
    "runtime too long": (plan_text(CELL, extra="max_runtime_minutes = 20000\n"),
                         "max_runtime_minutes must be a whole number from 1 to 10080"),
    "bad name": (plan_text(CELL, extra="name = 'Weekly Run'\n"), "name must be 1-40 of a-z, 0-9 and '-'"),
    "cell not a table": ("max_usd = 2.0\ncell = ['embed']\n", "write cells as [[cell]] tables"),
    "args not strings": (plan_text([("train-compile", ["L40S"], ["--repeats", 2])]), "args must be a list of strings"),
    "empty matrix": ("max_usd = 20.0\n", "the matrix is empty"),
    "no gpus": (plan_text([("train-compile", [], TRAIN)]), "give gpus ="),
    "unknown workload": (plan_text([("train-compiel", ["L40S"], TRAIN)]), "train-compiel"),
    "unknown setup": (plan_text([("train-compile", ["L40S"], ["--setups", "nope"])]), "nope"),
    "unknown argument": (plan_text([("train-compile", ["L40S"], ["--gpu", "H100"])]), "bad args"),
    "unknown key": ("max_usd = 2.0\nmax_usd_total = 3\n[[cell]]\nworkload = 'embed'\ngpus = ['L40S']\n",
                    "unknown key 'max_usd_total'"),
    "twice": (plan_text([("train-compile", ["L40S", "l40s"], TRAIN)]), "twice"),
    "bad set value": (plan_text([("train-compile", ["L40S"], [*TRAIN, "--set", "batch=-4"])]),
                      "batch must be an integer >= 1"),
    "unknown set field": (plan_text([("embed", ["L40S"], ["--smoke", "--set", "nosuch=1"])]), "nosuch"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_plan_is_one_line_and_no_request(name, fake, launcher_env, capsys, tmp_path):
    text, says = BAD[name]
    result = sweep(capsys, write_plan(tmp_path, text))
    assert result.code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gpubench-launch: error: plan ")
    assert says in result.stderr
    assert fake.requests == []
    assert not (tmp_path / "gpubench-results").exists()


def test_a_plan_that_is_not_utf8_is_one_line(fake, launcher_env, capsys, tmp_path):
    path = tmp_path / "plan.toml"
    path.write_bytes(plan_text(CELL).encode() + b"# caf\xe9, written in Latin-1\n")
    result = sweep(capsys, str(path))
    assert result.code == 2, result.stderr
    assert result.stderr == f"gpubench-launch: error: plan {path} is not UTF-8 text\n"
    assert fake.requests == [] and not (tmp_path / "gpubench-results").exists()


def test_a_missing_plan_file(fake, launcher_env, capsys, tmp_path):
    result = sweep(capsys, str(tmp_path / "nope.toml"))
    assert result.code == 2 and result.stderr.count("\n") == 1 and "cannot read plan" in result.stderr
    assert fake.requests == []


def test_unknown_gpu_reads_the_types_and_submits_nothing(fake, launcher_env, capsys, tmp_path):
    result = sweep(capsys, write_plan(tmp_path, plan_text([("train-compile", ["L40S", "H1OO"], TRAIN)])))
    assert result.code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "H1OO" in result.stderr and "L40S" in result.stderr
    assert {(r.method, r.path) for r in fake.requests} == {("GET", "/api/v1/instances/types")}
