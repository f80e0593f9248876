""".ci/lint: hadolint on every Dockerfile and actionlint on every workflow, failing on any finding."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT = REPO / ".ci" / "lint"

GOOD_WORKFLOW = """name: ok
on: push
permissions:
  contents: read
jobs:
  ok:
    runs-on: ubuntu-24.04
    steps:
      - run: echo ok
"""


def lint(root: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(LINT), *([str(root)] if root else [])], capture_output=True, text=True,
                          timeout=120)


def tree(tmp_path: Path, dockerfile: str = "FROM ubuntu:24.04\nCMD [\"true\"]\n", workflow: str = GOOD_WORKFLOW):
    (tmp_path / "images/bad").mkdir(parents=True)
    (tmp_path / "images/bad/Dockerfile").write_text(dockerfile)
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/workflows/ci.yml").write_text(workflow)
    return tmp_path


def test_repository_dockerfiles_and_workflows_lint_clean():
    result = lint()
    assert result.returncode == 0, result.stdout + result.stderr
    stacks = [REPO / "Dockerfile.base", *(REPO / "images/_layers").glob("*/Dockerfile")]  # the vLLM stack's too
    assert REPO / "images/_layers/vllm-base/Dockerfile" in stacks
    tests_image = [REPO / "tests/docker/Dockerfile"]  # the docker engine tests' stand-in image
    dockerfiles = len(stacks) + len(list((REPO / "images").glob("*/Dockerfile"))) + len(tests_image)
    workflows = len(list((REPO / ".github/workflows").glob("*.yml")))
    assert f"hadolint on {dockerfiles} Dockerfiles, actionlint on {workflows} workflows: clean" in result.stdout


def test_a_small_clean_tree_passes(tmp_path):
    result = lint(tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_floating_tag_fails_lint_naming_file_and_line(tmp_path):
    result = lint(tree(tmp_path, dockerfile="FROM ubuntu:24.04\nRUN true\nFROM python:latest\n"))
    assert result.returncode == 1
    assert "./images/bad/Dockerfile:3 DL3007" in result.stdout


def test_broken_workflow_fails_lint_naming_file_and_line(tmp_path):
    broken = GOOD_WORKFLOW.replace("runs-on: ubuntu-24.04", "runs-on: ubuntu-24.04\n    step: []")
    result = lint(tree(tmp_path, workflow=broken))
    assert result.returncode == 1
    assert ".github/workflows/ci.yml:8:5: unexpected key \"step\"" in result.stdout



def test_the_test_workflow_runs_ci_run_with_its_services_and_the_fast_layer_alone():
    workflow = (REPO / ".github/workflows/test.yml").read_text()
    steps = [line.strip().removeprefix("- ") for line in workflow.splitlines()]
    runs = [step.removeprefix("run:").strip() for step in steps if step.startswith("run:")]
    assert any(run.startswith("sudo ") and run.endswith("bash .ci/run") for run in runs), runs
    assert "pytest -m fast" in runs
    assert "pytest" not in runs  # never the bare suite without the services .ci/run starts
    assert (REPO / ".ci/run").read_text().rstrip().endswith(".venv/bin/pytest")
