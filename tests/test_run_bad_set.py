"""A --set outside its field's declaration stops `gpubench run` before anything runs: one line, exit 2, no run
folder, and no container (--docker checks it here first); `--check` says the same without running."""

from __future__ import annotations

import pytest
from clirun import gpubench


@pytest.mark.parametrize("workload, pair, says", [
    ("train-compile", "batch=-4", "--set batch=-4: batch must be an integer >= 1"),
    ("train-compile", "batch=0", "--set batch=0: batch must be an integer >= 1"),
    ("train-compile", "dtype=float99", "--set dtype=float99: dtype must be one of bfloat16, float16, float32"),
    ("train-compile", "device=tpu", "--set device=tpu: device must be auto"),
    ("train-compile", "timed_steps=-1", "--set timed_steps=-1: timed_steps must be an integer >= 1"),
    ("train-compile", "num_heads=7", "does not divide by num_heads 7"),
    ("embed", "batch_size=-1", "--set batch_size=-1: batch_size must be an integer >= 1"),
    ("whisper", "nosuch=1", "--set nosuch: unknown config field of this workload; valid: size, batch_size"),
])
@pytest.mark.parametrize("mode", [[], ["--smoke"], ["--check"], ["--docker"]], ids=["run", "smoke", "check", "docker"])
def test_bad_set_is_one_line_exit_2_and_nothing_written(tmp_path, workload, pair, says, mode):
    result = gpubench("run", workload, *mode, "--set", pair, cwd=tmp_path)
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: ") and says in line
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_check_passes_good_input_and_writes_nothing(tmp_path):
    result = gpubench("run", "train-compile", "--check", "--set", "batch=8", "--setups", "eager-sdpa", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert result.stdout == "" and "valid" in result.stderr
    assert list(tmp_path.iterdir()) == []
