"""`python -m gpubench.images bake-weights`: the step an image build runs for --build-arg WEIGHTS=bake."""

from __future__ import annotations

import subprocess
import sys


def bake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpubench.images", *args], capture_output=True, text=True,
                          timeout=60, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})


def test_workload_without_weights_bakes_nothing_and_succeeds(tmp_path):
    result = bake("bake-weights", "first-matmul", str(tmp_path / "weights"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "first-matmul loads no weights; nothing baked"
    assert list((tmp_path / "weights").iterdir()) == []


def test_unknown_workload_fails_the_build_naming_the_valid_ones(tmp_path):
    result = bake("bake-weights", "sdxl-turbo", str(tmp_path))
    assert result.returncode != 0
    assert "unknown workload 'sdxl-turbo'; valid: train-compile, embed" in result.stderr


def test_wrong_arguments_print_usage(tmp_path):
    result = bake("bake", "sdxl")
    assert result.returncode == 2
    assert result.stderr.strip() == "usage: python -m gpubench.images bake-weights NAME INTO [CACHE]"
