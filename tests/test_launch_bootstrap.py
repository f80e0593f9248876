"""first-matmul on a stock template: the launch script installs uv, torch and gpubench (here from a
local wheel folder, offline), times each step as its own phase, then runs the matmul from what it
installed; --template (a prepared template) skips it. Against the fake's instances and SSH servers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_launch_support as support
from test_launch_support import launch, run_folders

fake, launcher_env = support.fake, support.launcher_env
ROOT = Path(__file__).resolve().parent.parent
SLOWER = [{"minute_s": 1.0}]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """A wheel folder holding gpubench, built from this checkout without the network."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("gpubench", "workloads", "launcher"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(src)], check=True, capture_output=True)
    assert list(out.glob("gpubench-*.whl"))
    return out


def stock_python(where: Path) -> Path:
    """A template's Python with torch (and gpubench's dependencies) but no gpubench: a virtual
    environment whose site-packages links to this one's, gpubench left out."""
    uv = Path(sys.executable).parent / "uv"
    subprocess.run([str(uv), "venv", "-q", "--python", sys.executable, str(where)], check=True)
    ours = Path(next(p for p in sys.path if p.endswith("site-packages")))
    theirs = next(where.glob("lib/python*/site-packages"))
    for entry in ours.iterdir():
        if "gpubench" in entry.name.lower() or (theirs / entry.name).exists():
            continue
        if entry.name.endswith(".dist-info"):  # uv looks for installed packages in real folders only
            shutil.copytree(entry, theirs / entry.name)
        else:
            (theirs / entry.name).symlink_to(entry)
    python = where / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import gpubench"], capture_output=True).returncode != 0
    return python


def phases(result) -> dict[str, str]:
    return {r["phase"].split()[1]: r["message"] for r in result.records()
            if r["kind"] == "progress" and r["phase"].startswith("bootstrap ")}


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_stock_template_is_bootstrapped_and_timed(fake, launcher_env, capsys, tmp_path, monkeypatch, wheels):
    python = stock_python(tmp_path / "stock")
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_PYTHON", str(python))
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_INDEX_URL", "none")
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_FIND_LINKS", str(wheels))
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke")
    assert result.code == 0, result.stderr

    steps = phases(result)
    assert list(steps) == ["uv", "python", "torch", "gpubench"]
    assert steps["gpubench"].startswith("ok ")  # installed from the wheel folder
    assert steps["torch"].startswith("present ")  # the stock Python had it
    installed = list((tmp_path / "stock").glob("lib/python*/site-packages/gpubench-*.dist-info"))
    assert installed and not installed[0].is_symlink()

    [launch_record] = [r for r in result.records() if r["kind"] == "result" and r["setup"] == "launch"]
    m = {k: v["value"] for k, v in launch_record["metrics"].items()}
    assert launch_record["status"] == "ok"
    assert {"bootstrap_uv_s", "bootstrap_python_s", "bootstrap_torch_s", "bootstrap_gpubench_s"} <= set(m)
    assert m["bootstrap_gpubench_s"] > 0
    # The install is inside "first CUDA op", as in the study.
    assert m["create_to_matmul_s"] > m["create_to_ssh_s"] and m["create_to_matmul_s"] >= m["bootstrap_gpubench_s"]
    [matmul] = [r for r in result.records() if r["kind"] == "result" and r["setup"] == "matmul"]
    assert matmul["status"] == "ok"


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_a_failed_step_is_recorded_and_nothing_runs(fake, launcher_env, capsys, tmp_path, monkeypatch):
    python = stock_python(tmp_path / "stock")
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_PYTHON", str(python))
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_INDEX_URL", "none")
    monkeypatch.setenv("GPUBENCH_BOOTSTRAP_FIND_LINKS", str(empty))
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke")
    assert result.code == 3, result.stderr
    assert phases(result)["gpubench"].startswith("failed ")
    [launch_record] = [r for r in result.records() if r["kind"] == "result" and r["setup"] == "launch"]
    assert launch_record["status"] == "error" and "create_to_matmul_s" in launch_record["error"]
    assert not [r for r in result.records() if r["kind"] == "result" and r["setup"] == "matmul"]
    [folder] = run_folders(tmp_path)
    assert json.loads((folder / "job.json").read_text())["exit_code"] == 97


def test_a_prepared_template_skips_the_bootstrap(fake, launcher_env, capsys):
    stock = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke", "--dry-run")
    prepared = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke", "--dry-run", "--template", "gpubench-ready")
    assert stock.code == prepared.code == 0, stock.stderr + prepared.stderr
    plans = stock.stdout + stock.stderr, prepared.stdout + prepared.stderr
    assert "gb_step torch" in plans[0] and "gpubench run first-matmul --smoke" in plans[0]
    assert "gb_step" not in plans[1] and "gpubench run first-matmul --smoke" in plans[1]
