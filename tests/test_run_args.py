"""`gpubench run`'s arguments are declared once (gpubench/run_args.py): what the launcher, a sweep cell and `--docker`
write is what `gpubench run` reads back, and each argument is bounded, defaulted and refused the same way by all
of them (before: `--repeats 101` ran locally but not on the launcher; the launcher's results folder ignored
GPUBENCH_RESULTS_DIR)."""

from __future__ import annotations

import shlex

import pytest
import test_launch_support as support
from clirun import gpubench
from sweep_support import plan_text, sweep, write_plan
from test_launch_support import launch

from gpubench.catalog import WORKLOADS
from gpubench.launcher.plan import run_command
from gpubench.run_args import RunArgs

fake, launcher_env = support.fake, support.launcher_env

EVERY = RunArgs(workload="train-compile", setups=("eager-sdpa", "compile-sdpa"), smoke=True, repeats=3,
                overrides=("batch=2", "timed_steps=4"), weights="random", price=1.25,
                run_id="train-compile-20261201T000000Z-a1b2c3", on_cpu=True)


def test_every_argument_written_is_read_back_the_same():
    assert RunArgs.from_argv(EVERY.to_argv()) == EVERY
    assert RunArgs.from_argv(["run", "embed"]) == RunArgs(workload="embed")  # nothing given: nothing written
    assert RunArgs(workload="embed").to_argv() == ["run", "embed"]
    spec = WORKLOADS.get("train-compile")
    command = run_command(spec, list(EVERY.setups), True, 3, EVERY.overrides, "random")
    assert shlex.split(command)[1:] == RunArgs(workload="train-compile", setups=EVERY.setups, smoke=True, repeats=3,
                                               overrides=EVERY.overrides, weights="random").to_argv()


def test_gpubench_run_takes_every_argument_the_others_write(tmp_path):
    result = gpubench(*EVERY.to_argv(), "--check", cwd=tmp_path)
    assert result.code == 0, result.stderr


REPEATS_101 = "--repeats must be a whole number from 1 to 100 (got 101)"


def test_repeats_has_one_bound_for_gpubench_run_the_launcher_and_sweeps(fake, launcher_env, capsys, tmp_path):
    local = gpubench("run", "train-compile", "--smoke", "--repeats", "101", "--check", cwd=tmp_path)
    assert (local.code, local.stderr.strip()) == (2, f"gpubench: error: {REPEATS_101}")
    launched = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--repeats", "101", "--dry-run")
    assert (launched.code, launched.stderr.strip()) == (2, f"gpubench-launch: error: {REPEATS_101}")
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S"], ["--smoke", "--repeats", "101"])]))
    swept = sweep(capsys, plan)
    assert swept.code == 2 and swept.stderr.strip().endswith(f"bad args: {REPEATS_101}")
    assert fake.requests == []
    ok = gpubench("run", "train-compile", "--smoke", "--repeats", "100", "--check", cwd=tmp_path)
    assert ok.code == 0, ok.stderr


@pytest.mark.parametrize("value", ["0", "2.5", "many"])
def test_repeats_that_are_not_a_count_are_refused_alike(tmp_path, value):
    result = gpubench("run", "train-compile", "--smoke", "--repeats", value, "--check", cwd=tmp_path)
    assert result.stderr.strip() == f"gpubench: error: --repeats must be a whole number from 1 to 100 (got {value})"


def test_the_launcher_keeps_runs_where_gpubench_run_does(fake, launcher_env, capsys, tmp_path, monkeypatch):
    kept = tmp_path / ("kept-" + "k" * 100)  # longer than the plan's 100 columns: printed whole, to copy
    monkeypatch.setenv("GPUBENCH_RESULTS_DIR", str(kept))
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--dry-run")
    assert result.code == 0, result.stderr
    assert f"store         {kept}/<run-id>/\n" in result.stdout
