"""Achieved TFLOP/s from counted FLOPs: the counts against the models' FLOPs worked out by hand, and the
share of the datasheet peak that the runner adds."""

from __future__ import annotations

import dataclasses
import io

import pytest
from clirun import gpubench

from gpubench.catalog import WORKLOADS
from gpubench.measure import flops
from gpubench.run.runner import Runner, RunRequest
from gpubench.schema import Metric, SetupResult
from gpubench.stores import RunDir
from gpubench.workload import build_config, load


def test_a_matmul_is_two_flops_per_multiply_add():
    import torch

    a, b = torch.randn(64, 32), torch.randn(32, 16)
    assert flops.count(lambda: a @ b) == 2 * 64 * 32 * 16


def test_percent_of_the_datasheet_peak_for_the_dtype():
    assert flops.pct_of_peak(494.5, "cuda:0 NVIDIA H200", "bfloat16") == pytest.approx(50.0)  # 989 bf16 dense
    assert flops.pct_of_peak(100, "NVIDIA GeForce RTX 4090", "float16") == pytest.approx(100 * 100 / 165.2)
    assert flops.pct_of_peak(10, "cuda:0 NVIDIA H200", "float32") == pytest.approx(100 * 10 / 67)
    assert flops.pct_of_peak(10, "cpu", "float32") is None  # no datasheet for a CPU
    assert flops.pct_of_peak(10, "cuda:0 NVIDIA A100 80GB PCIe", "fp8") is None  # no FP8 on an A100
    assert flops.pct_of_peak(10, None, "bfloat16") is None


def _runner(tmp_path, workload: str, overrides: dict) -> Runner:
    spec = WORKLOADS.get(workload)
    module = load(spec)
    request = RunRequest(spec=spec, setups=[spec.setups[0]], repeats=1, smoke=True, run_id="r",
                         config=build_config(module, True, overrides), weights="random")
    return Runner(request, RunDir.create(tmp_path, "r", echo=io.StringIO()), echo=lambda text: None)


def test_the_runner_adds_the_share_of_peak_from_the_results_device_and_dtype(tmp_path):
    runner = _runner(tmp_path, "train-compile", {"dtype": "float32"})

    def result(device, name, dtype):
        achieved = Metric(value=494.5, unit="TFLOP/s", better="higher")
        return SetupResult(run_id="r", setup="eager", repeat=0, status="ok", device=device, device_name=name,
                           dtype=dtype, metrics={"achieved_tflops": achieved})

    on_h200 = runner._costed(result("cuda:0", "NVIDIA H200", "bfloat16"))
    assert on_h200.metrics["pct_of_peak"].value == pytest.approx(50.0)
    assert on_h200.metrics["pct_of_peak"].better == "higher"
    assert runner._costed(result("cuda:0", "NVIDIA H200", "float32")).metrics["pct_of_peak"].value == pytest.approx(
        100 * 494.5 / 67)
    assert "pct_of_peak" not in runner._costed(result("cuda:0", "NVIDIA H200", None)).metrics  # no dtype, no peak
    assert "pct_of_peak" not in runner._costed(result("cpu", None, "bfloat16")).metrics


def _smoke(tmp_path, workload: str, setup: str) -> dict:
    done = gpubench("run", workload, "--smoke", "--weights", "random", "--setups", setup, "--json",
                    "--results-dir", str(tmp_path), cwd=tmp_path)
    assert done.code == 0, done.stderr[-2000:]
    (result,) = [r for r in done.records() if r["kind"] == "result"]
    assert result["status"] == "ok", result
    return result


def test_ddp_counts_six_flops_per_weight_and_the_attention(tmp_path):
    result = _smoke(tmp_path, "ddp-scaling", "124m-1gpu")
    config = build_config(load(WORKLOADS.get("ddp-scaling")), True, {})
    layers, width, seq, vocab = config.layers_124m, config.width_124m, config.seq_len, config.vocab_size
    matmul_weights = layers * 12 * width**2 + vocab * width  # qkv + proj + 4x MLP per block; the tied head
    # attention per token and layer: scores and values forward (4 S H), backward with the scores recomputed (10 S H)
    assert result["info"]["flops_per_token"] == 6 * matmul_weights + 14 * layers * seq * width
    metrics = {name: m["value"] for name, m in result["metrics"].items()}
    assert metrics["achieved_tflops"] == pytest.approx(
        metrics["tokens_per_s"] * result["info"]["flops_per_token"] / 1e12)


def test_embed_counts_the_encoder_per_passage(tmp_path):
    result = _smoke(tmp_path, "embed", "bge-small-128")
    config = build_config(load(WORKLOADS.get("embed")), True, {})
    hidden, seq, layers = 384, config.seq_len, config.num_layers  # bge-small: 384 wide, 1536 FFN
    per_passage = 2 * 12 * hidden**2 * seq * layers + 4 * seq**2 * hidden * layers + 2 * hidden**2  # + the pooler
    assert result["info"]["flops_per_passage"] == per_passage
    metrics = {name: m["value"] for name, m in result["metrics"].items()}
    assert metrics["achieved_tflops"] == pytest.approx(metrics["passages_per_s"] * per_passage / 1e12)
    assert metrics["gpu_only_tflops"] == pytest.approx(metrics["gpu_only_passages_per_s"] * per_passage / 1e12)


def test_sdxl_per_image_count_from_one_and_two_steps_equals_the_whole_generation():
    import torch

    from gpubench.workloads import sdxl
    from gpubench.workloads.sdxl import components as sdxl_components

    config = dataclasses.replace(build_config(load(WORKLOADS.get("sdxl")), True, {}), steps=3)
    pipe = sdxl_components.random_pipeline(config.architecture, "cpu", torch.float32)
    pipe.set_progress_bar_config(disable=True)
    whole = flops.count(lambda: pipe(config.prompt, num_inference_steps=3, height=config.height,
                                     width=config.width, guidance_scale=config.guidance_scale,
                                     num_images_per_prompt=2))
    assert sdxl.count_flops_per_image(pipe, config, batch=2) == pytest.approx(whole / 2)
