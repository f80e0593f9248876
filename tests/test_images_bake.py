"""`python -m gpubench.images`: bake-weights, the step an image build runs for --build-arg WEIGHTS=bake, and the
build plan the image builds read the catalog through (plan, names, bake-env)."""

from __future__ import annotations

import json
import subprocess
import sys

from gpubench.catalog import WORKLOADS


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
    assert result.stderr.strip().splitlines()[0].startswith("usage: python -m gpubench.images plan ")
    assert result.stderr.strip().endswith("python -m gpubench.images bake-weights NAME INTO [CACHE]")


def test_the_build_plan_puts_each_workload_on_its_catalog_stack_with_its_dockerfile():
    lines = [line.split() for line in bake("plan").stdout.splitlines()]
    plan = {name: (stack, dockerfile) for name, stack, dockerfile in lines}
    assert list(plan) == WORKLOADS.names()
    assert plan["vllm-fp8"] == ("vllm-base", "images/_layers/workload/Dockerfile")
    assert plan["sdxl"] == ("base", "images/_layers/workload/Dockerfile")
    assert plan["whisper"] == ("base", "images/whisper/Dockerfile")  # its own: it adds a library path
    assert bake("bake-env", "ollama-vs-vllm").stdout == "STACK=vllm-base\nDOCKERFILE=images/ollama-vs-vllm/Dockerfile\n"
    assert json.loads(bake("names").stdout) == WORKLOADS.names()
    unknown = bake("bake-env", "nope")
    assert unknown.returncode == 2 and unknown.stderr.startswith("unknown workload 'nope'; valid: train-compile")
