"""A GPU that cannot run the study is never rented: the launcher and sweeps check memory per GPU, GPUs of one host
and tensor-core features (gpubench/gpu_fit.py, from the catalog and data/gpu_peaks.csv) before any request that
costs money, in --dry-run too; an unfit candidate is left out with one line saying why, and the next one is used."""

from __future__ import annotations

import dataclasses

import pytest
import test_launch_support as support
from sweep_support import plan_text, submits, sweep, write_plan
from test_launch_support import launch

from gpubench.catalog import WORKLOADS
from gpubench.gpu_fit import why_unfit

fake, launcher_env = support.fake, support.launcher_env


def paid_requests(fake) -> list:
    return [r for r in fake.requests if r.method == "POST"]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_gpu_too_small_is_refused_before_anything_is_rented(fake, launcher_env, capsys, dry_run):
    result = launch(capsys, "vllm-fp8", "--gpu", "A4000", *(["--dry-run"] if dry_run else []))
    assert result.code == 2, result.stderr
    assert result.stderr.splitlines() == [
        "gpubench-launch: error: no --gpu fits vllm-fp8: A4000: vllm-fp8 needs 48 GB per GPU; A4000 (RTX A4000)"
        " has 16 GB"]
    assert result.stdout == "" and paid_requests(fake) == []


def test_each_unfit_candidate_says_why_and_the_next_one_runs(fake, launcher_env, capsys):
    result = launch(capsys, "vllm-fp8", "--gpu", "A100-80GB", "--gpu", "RTX5090", "--gpu", "L40S", "--dry-run")
    assert result.code == 0, result.stderr
    assert result.stderr.splitlines()[:2] == [
        "gpubench-launch: not using --gpu A100-80GB: vllm-fp8 needs FP8 tensor cores; A100-80GB (A100 80GB) has none",
        "gpubench-launch: not using --gpu RTX5090: vllm-fp8 needs 48 GB per GPU; RTX5090 (RTX 5090) has 32 GB"]
    assert "calm-lovelace-l40s-5e6f" in result.stdout
    assert "swift-curie-a100-80gb-9c0d" not in result.stdout and "keen-hopper" not in result.stdout
    assert paid_requests(fake) == []


def test_the_job_submitted_asks_only_for_the_gpus_that_fit(fake, launcher_env, capsys):
    result = launch(capsys, "vllm-fp8", "--gpu", "A100", "--gpu", "L40S", "--setups", "fp8-c1")
    assert "not using --gpu A100: vllm-fp8 needs 48 GB per GPU; A100 (A100) has 40 GB" in result.stderr
    [job] = submits(fake)
    assert job["gpu_type"] == ["L40S"]


def test_gpus_of_one_host_are_counted_for_the_setups_chosen(fake, launcher_env, capsys):
    refused = launch(capsys, "ddp-scaling", "--gpu", "A100-80GB:2", "--dry-run")
    assert refused.code == 2 and "ddp-scaling needs 4 GPUs of one host; A100-80GB:2 has 2" in refused.stderr
    fits = launch(capsys, "ddp-scaling", "--gpu", "A100-80GB:2", "--setups", "124m-1gpu,124m-2gpu", "--dry-run")
    assert fits.code == 0, fits.stderr
    assert "swift-curie-a100-80gb-x2-1e2f" in fits.stdout


def test_a_smoke_run_fits_any_gpu(fake, launcher_env, capsys):
    result = launch(capsys, "vllm-fp8", "--gpu", "A4000", "--smoke", "--dry-run")
    assert result.code == 0, result.stderr
    assert "not using" not in result.stderr


def test_a_sweep_leaves_out_unfit_cells_and_refuses_a_plan_with_none(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("vllm-prefix-cache", ["A4000", "L40S"], [])]))
    result = sweep(capsys, plan, "--dry-run")
    assert result.code == 0, result.stderr
    assert ("gpubench-launch: not running vllm-prefix-cache on A4000: vllm-prefix-cache needs 40 GB per GPU;"
            " A4000 (RTX A4000) has 16 GB") in result.stderr.splitlines()
    assert "unfit" in result.stdout and "to launch     1 of 2 cells" in result.stdout
    none = write_plan(tmp_path, plan_text([("vllm-fp8", ["A100", "A100-80GB"], [])]), "none.toml")
    refused = sweep(capsys, none)
    assert refused.code == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"gpubench-launch: error: plan {none}: no cell fits its GPU: vllm-fp8 on A100: ")
    assert "vllm-fp8 on A100-80GB: vllm-fp8 needs FP8 tensor cores" in line
    assert paid_requests(fake) == []


def test_a_gpu_the_table_does_not_know_is_refused_with_the_reason():
    why = why_unfit(WORKLOADS.get("train-compile"), "B300", 1)
    assert why == ("B300 is not in gpubench/data/gpu_peaks.csv, so its memory and features are unknown"
                   " (/instances/types lists host memory only): add its row")
    assert why_unfit(WORKLOADS.get("train-compile"), "h100-sxm", 1) is None  # a provider's other spelling
    bf16 = dataclasses.replace(WORKLOADS.get("vllm-serving"), min_gpu_memory_gb=16, min_compute_capability=(8, 0))
    assert why_unfit(bf16, "V100", 1) == "vllm-serving needs CUDA compute capability 8.0 or later; V100 (V100) is 7.0"


def test_a_sweep_runs_the_cells_that_fit_and_names_the_one_that_does_not(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("vllm-prefix-cache", ["A4000", "L40S"], ["--setups", "on-p1000-c1"])]))
    result = sweep(capsys, plan)
    [job] = submits(fake)
    assert job["gpu_type"] == ["L40S"]
    assert "missing: vllm-prefix-cache on A4000: unfit" in result.stderr
    assert result.code == 3  # a cell without a result, as one whose GPU had no capacity
