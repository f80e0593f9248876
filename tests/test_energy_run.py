"""Energy through a whole run: real worker processes of a probe workload (registered in them through a
sitecustomize hook) read a stand-in nvidia-ml-py (tests/fake_pynvml.py, as `pynvml` on their path) whose GPU
draws a known power; the runner adds joules per image from the catalog's energy basis; summary.md, `gpubench
report` and `gpubench compare` show them, compare with its noise rule."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.catalog import WORKLOADS
from gpubench.cli.main import cli as main
from gpubench.run.runner import Runner, RunRequest
from gpubench.stores import RunDir
from gpubench.workload import build_config, load

TESTS = Path(__file__).parent

PROBE = r'''
import time
from dataclasses import dataclass
from gpubench.catalog import CostBasis, WorkloadSpec
from gpubench.workload import MetricDef

@dataclass
class Config:
    seconds: float = 0.6

SMOKE = {}
METRICS = {"images_per_s": MetricDef("images/s", "higher")}

SPEC = WorkloadSpec(name="energy-run-probe", title="t", study="energy probe", setups=("b1",), gpus="none",
                    gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={}, module="energy_run_probe",
                    cost=CostBasis(metric="images_per_s", unit="1k images", per=1e3),
                    energy=CostBasis(metric="images_per_s", unit="image", per=1))

def run_setup(setup, config, ctx):
    ctx.progress("timed")
    time.sleep(config.seconds)
    return {"images_per_s": 2.0}
'''

HOOK = r'''
import sys
sys.path.insert(0, {folder!r})
sys.path.insert(0, {tests!r})
import energy_run_probe
from gpubench.catalog import WORKLOADS
WORKLOADS._items[energy_run_probe.SPEC.name] = energy_run_probe.SPEC
'''

# `import pynvml` in the worker: one GPU at the watts the test sets
PYNVML = r'''
import os, sys
import fake_pynvml
_fake = fake_pynvml.module([fake_pynvml.FakeGpu(watts=float(os.environ["FAKE_GPU_WATTS"]))])
globals().update({k: v for k, v in vars(_fake).items() if not k.startswith("__")})
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "energy_run_probe.py").write_text(PROBE)
    (folder / "pynvml.py").write_text(PYNVML)
    (folder / "sitecustomize.py").write_text(HOOK.format(folder=str(folder), tests=str(TESTS)))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("energy_run_probe", None)
    import energy_run_probe

    monkeypatch.setitem(WORKLOADS._items, energy_run_probe.SPEC.name, energy_run_probe.SPEC)
    yield energy_run_probe
    sys.modules.pop("energy_run_probe", None)


def run(tmp_path, monkeypatch, probe, watts, run_id):
    monkeypatch.setenv("FAKE_GPU_WATTS", str(watts))
    request = RunRequest(spec=probe.SPEC, setups=["b1"], repeats=2, smoke=False, run_id=run_id,
                         config=build_config(load(probe.SPEC), False, {}), price_usd_per_hour=2.0, weights="random")
    run_dir = RunDir.create(tmp_path / "runs", run_id, echo=io.StringIO())
    Runner(request, run_dir, echo=lambda text: None).run(argv=["gpubench", "run", probe.SPEC.name])
    run_dir.close()
    records = [json.loads(line) for line in (run_dir.path / "results.jsonl").read_text().splitlines()]
    return run_dir.path, [r for r in records if r["kind"] == "result"]


def test_a_run_on_a_gpu_reports_its_energy_per_image_everywhere(tmp_path, monkeypatch, probe):
    low, low_results = run(tmp_path, monkeypatch, probe, 300, "energy-run-probe-20261201T000000Z-aaaaaa")
    high, _ = run(tmp_path, monkeypatch, probe, 450, "energy-run-probe-20261201T000100Z-bbbbbb")
    for result in low_results:
        assert result["status"] == "ok" and result["energy"]["source"] == "NVML total-energy counter"
        assert result["energy"]["gpus"] == [0] and result["energy"]["seconds"] >= 0.6
        metrics = {name: m["value"] for name, m in result["metrics"].items()}
        assert metrics["avg_power_w"] == pytest.approx(300.0, rel=0.03)
        # 300 W at 2 images/s: 150 J per image
        assert metrics["j_per_image"] == pytest.approx(150.0, rel=0.03)
        assert result["metrics"]["j_per_image"]["unit"] == "J/image"

    summary = (low / "summary.md").read_text()
    header = next(line for line in summary.splitlines() if line.startswith("| setup"))
    assert "j_per_image (J/image)" in header and header.rstrip(" |").endswith("energy")
    assert "| NVML counter |" in summary

    cli = CliRunner()
    shown = cli.invoke(main, ["report", str(tmp_path / "runs")])
    assert shown.exit_code == 0, shown.output
    assert "j_per_image (J/image)" in shown.output and "NVML counter" in shown.output

    compared = cli.invoke(main, ["compare", str(low), str(high)])
    assert compared.exit_code == 0, compared.output
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in compared.output.splitlines()
             if line.startswith("| b1 |")]
    rows = {row[1].split(" (")[0]: row[-1] for row in cells}
    # 50% more joules per image, far past the noise of two steady repeats: worse (lower is better)
    assert rows["j_per_image"] == "worse" and rows["energy_j"] == "worse"
    assert rows["avg_power_w"] == "changed"  # watts have no better side
