"""Adding a thirteenth workload, as docs/architecture.md tells it: in a copy of the repository, a toy study's module
(a package with a data file), one catalog entry and an image folder on the template (a requirements.in and its lock,
no Dockerfile), and nothing else. Then every tool finds it: `gpubench list`, `show`, `run --smoke`, `run --check`,
the launcher's `--dry-run`, the image checks and the build plan, the wheel's contents and `report`.

The files this test writes are TOUCHED, all of them: nothing else in the copy is edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import test_launch_support as support

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("gpubench", "workloads", "launcher", "images", "tools", "pyproject.toml", "setup.py", "README.md",
          "Dockerfile.base", ".dockerignore")
fake, launcher_env = support.fake, support.launcher_env

MODULE = '''"""A toy study: sums of squares in pure Python, timed (tests/test_add_a_workload.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.config_fields import param
from gpubench.workload import MetricDef, SetupContext

SCALE = json.loads((Path(__file__).parent / "scale.json").read_text())  # setup -> multiple of n


@dataclass
class Config:
    n: int = param(200_000, "numbers squared and summed per pass", min=1)
    passes: int = param(5, "timed passes", min=1)


SMOKE = {"n": 2_000, "passes": 2}
METRICS = {"items_per_s": MetricDef("items/s", "higher", "numbers squared and summed per second")}
HEADLINE = ["items_per_s"]
SETUPS = {name: scale for name, scale in SCALE.items()}
SETUP_NOTES = {"small": "n numbers a pass", "large": "4 n numbers a pass"}


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    count = config.n * SETUPS[setup]
    ctx.progress("timed")
    started = time.perf_counter()
    for _ in range(config.passes):
        sum(i * i for i in range(count))
    return {"items_per_s": count * config.passes / (time.perf_counter() - started)}
'''

CATALOG_ENTRY = '''
WORKLOADS.add("toy-study", WorkloadSpec(
    name="toy-study",
    title="Toy study: sums of squares per second",
    study="A toy study, added by tests/test_add_a_workload.py",
    setups=("small", "large"),
    gpus="any 1 GPU", gpu_count=1, min_gpu_memory_gb=1, expected_minutes=1,
    dependencies={},
    cost=CostBasis(metric="items_per_s", unit="1M items", per=1e6),
    module="gpubench.workloads.toy_study",
))
'''

# The files the study is: its module (a package, with a data file), its catalog entry, its image folder.
TOUCHED = ("workloads/toy_study/__init__.py", "workloads/toy_study/scale.json", "gpubench/catalog.py",
           "images/toy-study/requirements.in", "images/toy-study/requirements.lock")


def add_the_toy_study(repo: Path) -> None:
    (repo / "workloads/toy_study").mkdir()
    (repo / "workloads/toy_study/__init__.py").write_text(MODULE)
    (repo / "workloads/toy_study/scale.json").write_text(json.dumps({"small": 1, "large": 4}))
    with (repo / "gpubench/catalog.py").open("a") as catalog:
        catalog.write(CATALOG_ENTRY)
    (repo / "images/toy-study").mkdir()
    (repo / "images/toy-study/requirements.in").write_text(
        "# images/toy-study: the toy study on the torch stack, from the template; it adds nothing\n"
        "-r ../_layers/base/requirements.in\n")
    # What `python tools/lock_images.py toy-study` writes (offline here: the same input as first-matmul's, locked)
    lock = (repo / "images/first-matmul/requirements.lock").read_text()
    (repo / "images/toy-study/requirements.lock").write_text(lock.replace("first-matmul", "toy-study"))


def changed_files(before: Path, after: Path) -> list[str]:
    """Files of `after` that are new or differ from `before`."""
    out = []
    for path in sorted(after.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            old = before / path.relative_to(after)
            if not old.exists() or old.read_bytes() != path.read_bytes():
                out.append(path.relative_to(after).as_posix())
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A copy of the repository with the toy study added, its wheel built and installed into a fresh environment
    (the dependencies of this one, none of its gpubench)."""
    base = tmp_path_factory.mktemp("add-a-workload")
    pristine, repo = base / "pristine", base / "repo"
    for root in (pristine, repo):
        root.mkdir()
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy(source, root / name)
    add_the_toy_study(repo)
    assert changed_files(pristine, repo) == sorted(TOUCHED)
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(repo)], check=True, capture_output=True, timeout=300)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    import click

    site = next(venv.glob("lib/python*/site-packages"))
    (site / "_dependencies.pth").write_text(str(Path(click.__file__).resolve().parents[1]) + "\n")
    [wheel] = wheels.glob("gpubench-*.whl")
    subprocess.run([str(Path(sys.executable).parent / "uv"), "pip", "install", "-q", "--offline", "--no-deps",
                    "--python", str(venv / "bin/python"), str(wheel)], check=True, capture_output=True, timeout=120)
    (base / "work").mkdir()
    return base


def tool(base: Path, name: str, *args: str, env: dict | None = None, cwd: Path | None = None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "RUNCRATE_", "AWS_"))}
    done = subprocess.run([str(base / "venv/bin" / name), *args], cwd=cwd or base / "work", capture_output=True,
                          text=True, timeout=300, env={**environment, **(env or {})})
    return done


def test_the_wheel_holds_the_new_package_and_its_data_file(repo):
    [wheel] = (repo / "wheels").glob("gpubench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "gpubench/workloads/toy_study/__init__.py" in names and "gpubench/workloads/toy_study/scale.json" in names
    installed = subprocess.run([str(repo / "venv/bin/python"), "-c", "import gpubench.workloads.toy_study as m;"
                                " print(m.__file__)"], cwd=repo / "work", capture_output=True, text=True, timeout=60)
    assert str(repo / "venv") in installed.stdout, installed.stderr  # the wheel's copy, not this checkout's


def test_list_and_show_name_it_with_its_setups_config_and_metrics(repo):
    listed = tool(repo, "gpubench", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert "toy-study" in [row["name"] for row in rows] and "vllm-fp8" in [row["name"] for row in rows]
    shown = tool(repo, "gpubench", "show", "toy-study")
    assert shown.returncode == 0, shown.stderr
    for text in ("toy-study: Toy study", "small", "4 n numbers a pass", "n ", "passes", "items_per_s",
                 "usd_per_1M_items", "image:  ghcr.io/gpubench/toy-study:"):
        assert text in shown.stdout, text


def test_run_check_and_smoke_run_and_report(repo):
    checked = tool(repo, "gpubench", "run", "toy-study", "--smoke", "--check")
    assert checked.returncode == 0 and "arguments and config are valid" in checked.stderr
    bad = tool(repo, "gpubench", "run", "toy-study", "--smoke", "--check", "--set", "passes=0")
    assert bad.returncode == 2 and "passes" in bad.stderr
    ran = tool(repo, "gpubench", "run", "toy-study", "--smoke", "--json", "--price", "2.0")
    assert ran.returncode == 0, ran.stderr[-2000:]
    results = [r for r in map(json.loads, ran.stdout.splitlines()) if r["kind"] == "result"]
    assert [(r["setup"], r["status"]) for r in results] == [("small", "ok"), ("large", "ok")]
    assert all(r["metrics"]["items_per_s"]["value"] > 0 for r in results)
    report = tool(repo, "gpubench", "report", "gpubench-results")
    assert report.returncode == 0, report.stderr
    assert "toy-study" in report.stdout and "items_per_s" in report.stdout and "large" in report.stdout


def test_the_launchers_dry_run_plans_it(repo, fake, launcher_env):
    planned = tool(repo, "gpubench-launch", "toy-study", "--gpu", "L40S", "--smoke", "--dry-run", env=launcher_env)
    assert planned.returncode == 0, planned.stderr
    assert "command       gpubench run toy-study --smoke" in planned.stdout
    assert "image         ghcr.io/gpubench/toy-study:" in planned.stdout and "nothing was launched" in planned.stdout


def test_the_image_checks_and_the_build_plan_take_it_from_the_template(repo):
    copy = repo / "repo"
    checks = subprocess.run([str(repo / "venv/bin/python"), "tools/image_checks.py"], cwd=copy, capture_output=True,
                            text=True, timeout=120)
    assert checks.returncode == 0, checks.stderr
    plan = subprocess.run([str(repo / "venv/bin/python"), "-m", "gpubench.images", "plan"], cwd=copy,
                          capture_output=True, text=True, timeout=60)
    assert "toy-study base images/_layers/workload/Dockerfile" in plan.stdout.splitlines(), plan.stderr
    # the image checks do look at the new folder: without its lock they say so
    (copy / "images/toy-study/requirements.lock").rename(copy / "lock.bak")
    try:
        missing = subprocess.run([str(repo / "venv/bin/python"), "tools/image_checks.py"], cwd=copy,
                                 capture_output=True, text=True, timeout=120)
    finally:
        (copy / "lock.bak").rename(copy / "images/toy-study/requirements.lock")
    assert missing.returncode == 1 and "images/toy-study/requirements.lock:1: missing" in missing.stderr
