"""The test layers come from a rule in conftest.py, not from hand-written marks: what needs an engine is `engine`,
logic in the test process is `fast`, and pyproject.toml registers both."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest

TESTS = Path(__file__).resolve().parent


def item(fixtures=(), skip_reason=None):
    marks = [pytest.mark.skipif(True, reason=skip_reason).mark] if skip_reason else []
    return SimpleNamespace(fixturenames=list(fixtures), iter_markers=lambda name: iter(marks))


def test_tests_that_need_an_engine_are_found_by_their_fixtures_skips_or_helpers():
    assert conftest._needs_engine(item(["tmp_path", "s3_bucket"]), "")
    assert conftest._needs_engine(item(skip_reason="no chromium on PATH (.ci/run installs Debian's chromium)"), "")
    assert conftest._needs_engine(item(skip_reason=".venv-vllm is absent: bash tools/vllm_cpu_venv.sh builds it"), "")
    from llamacpp_support import ABSENT

    assert conftest._needs_engine(item(skip_reason=ABSENT), "")
    assert conftest._needs_engine(item(["tiny_llamacpp"]), "")
    assert conftest._needs_engine(item(), (TESTS / "test_docker_engine_parity.py").read_text())
    assert not conftest._needs_engine(item(["tmp_path", "monkeypatch"]), (TESTS / "test_schema.py").read_text())


def test_fast_means_no_subprocess_workload_or_torch():
    assert conftest._fast((TESTS / "test_schema.py").read_text())
    assert conftest._fast((TESTS / "test_workload_definition.py").read_text())
    assert not conftest._fast((TESTS / "test_run_smoke.py").read_text())  # a real CLI run
    assert not conftest._fast((TESTS / "test_add_a_workload.py").read_text())
    assert not conftest._fast('torch = pytest.importorskip("torch")\n')  # an import all the same


def test_the_markers_are_registered_and_strict():
    options = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert {m.split(":")[0] for m in options["markers"]} == {"fast", "engine"}
    assert "--strict-markers" in options["addopts"]


def test_this_module_is_in_the_fast_layer(request):
    assert request.node.get_closest_marker("fast") is not None


def test_the_files_of_one_shared_engine_are_one_group_found_by_imports_and_fixtures(tmp_path):
    def group(source: str) -> str:
        path = tmp_path / f"test_{abs(hash(source))}.py"
        path.write_text(source)
        return conftest.xdist_group(path)

    assert group("from slurm_support import slurm\n") == "slurm"
    assert group("import docker_engine\n") == "docker"
    assert group("def test_x(tiny_vllm):\n    pass\n") == "vllm"
    assert group("@pytest.fixture\ndef served(tiny_llamacpp):\n    return tiny_llamacpp\n") == "llamacpp"
    alone = '"""Reads docker_engine and tiny_vllm in its text only."""\n'
    assert group(alone) == str(tmp_path / f"test_{abs(hash(alone))}.py")  # a word is not a use
    assert conftest.xdist_group(TESTS / "test_layers.py") == str(TESTS / "test_layers.py")


def test_engine_groups_start_first_and_the_fast_files_last():
    order = [conftest.start_order(TESTS / name) for name in (
        "test_slurm_launch.py", "test_docker_hosts.py", "test_servers_vllm.py", "test_llamacpp_server.py",
        "test_run_smoke.py", "test_schema.py")]
    assert order == sorted(order) and len(set(order)) == len(order)
