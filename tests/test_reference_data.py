"""The posts' published numbers (gpubench/data/reference.csv): every row names a real workload, setup and
metric, and a run on a GPU of the post's class finds the post's number for its setup and metric."""

import datetime
from collections import Counter

import pytest

from gpubench import reference
from gpubench.catalog import WORKLOADS
from gpubench.pricing import cost_metrics
from gpubench.run.worker import HARNESS_METRICS
from gpubench.schema import Metric
from gpubench.workload import load

# What nvidia-smi calls each GPU class the posts name.
SMI_NAMES = {
    "RTX 5090": "NVIDIA GeForce RTX 5090",
    "L40S": "NVIDIA L40S",
    "RTX A6000": "NVIDIA RTX A6000",
    "H100 PCIe": "NVIDIA H100 PCIe",
    "A10": "NVIDIA A10",
}


def reportable_metrics(spec) -> set[str]:
    """The workload's declared metrics, the harness's (peak memory, utilisation, energy) and the cost metrics the
    runner adds from its cost basis."""
    names = set(load(spec).metrics) | set(HARNESS_METRICS)
    if spec.cost is not None:
        names |= set(cost_metrics(spec.cost, {spec.cost.metric: Metric(value=1.0, unit="")}, usd_per_hour=1.0))
    return names


def test_every_row_names_a_workload_setup_and_metric_a_run_can_report():
    rows = reference.published()
    assert len(rows) > 600
    workloads = {spec.name: spec for spec in WORKLOADS}
    metrics = {}
    for row in rows:
        assert row.workload in workloads, row
        spec = workloads[row.workload]
        assert row.setup in spec.setups, row
        if row.workload not in metrics:
            metrics[row.workload] = reportable_metrics(spec)
        assert row.metric in metrics[row.workload], row
        assert row.value > 0, row
        datetime.date.fromisoformat(row.post)
    # every study with a results table has rows; first-matmul's table is the launcher's phases
    assert {spec.name for spec in WORKLOADS} - set(metrics) == {"first-matmul"}


def test_one_number_per_gpu_setup_and_metric():
    counts = Counter((r.workload, r.gpu, r.setup, r.metric) for r in reference.published())
    assert [key for key, n in counts.items() if n > 1] == []


def test_each_gpu_name_is_the_only_class_its_nvidia_smi_name_matches():
    classes = {r.gpu for r in reference.published()}
    assert classes <= set(SMI_NAMES)
    for gpu in classes:
        assert reference.gpu_class(SMI_NAMES[gpu], classes) == gpu


@pytest.mark.parametrize(("workload", "gpu", "setup", "metric", "value"), [
    ("embed", "NVIDIA H100 PCIe", "bge-large-512", "passages_per_s", 598),
    ("embed", "NVIDIA L40S", "bge-small-128", "usd_per_1M_passages", 0.032),
    ("sdxl", "NVIDIA H100 PCIe", "compile-b4", "s_per_image", 1.67),
    ("sdxl", "NVIDIA RTX A6000", "compile-b1", "compile_s", 188),
    ("vllm-serving", "NVIDIA L40S", "c64", "output_tokens_per_s", 1887),
    ("vllm-serving", "NVIDIA RTX A6000", "c64", "ttft_ms_p99", 3347),
    ("train-compile", "NVIDIA L40S", "compile-sdpa", "1M_tokens_per_usd", 231),
    ("whisper", "NVIDIA GeForce RTX 5090", "fw-turbo-fp16-b16", "realtime_factor", 315),
    ("whisper", "NVIDIA GeForce RTX 5090", "fw-turbo-fp16-b16", "1k_audio_hours_per_usd", 0.267),
    ("whisper", "NVIDIA H100 PCIe", "fw-large-v3-fp16-seq", "usd_per_1k_audio_hours", 207.53),
    ("finetune", "NVIDIA L40S", "lora-mb4", "peak_mem_gib", 14.5),
    ("finetune", "NVIDIA L40S", "qlora-mb8", "eval_loss_before", 1.144),
    ("cold-start", "NVIDIA L40S", "cache-evicted", "total_s", 18.3),
    ("ollama-vs-vllm", "NVIDIA A10", "ollama-q4km-u1", "output_tokens_per_s", 89),
    ("ollama-vs-vllm", "NVIDIA A10", "vllm-bf16-gsm8k", "gsm8k_correct", 228),
    ("vllm-fp8", "NVIDIA H100 PCIe", "fp8-c64", "output_tokens_per_s", 6147),
    ("vllm-fp8", "NVIDIA H100 PCIe", "bf16-c1", "kv_cache_tokens", 959936),
    ("vllm-prefix-cache", "NVIDIA L40S", "off-p4000-c64", "ttft_ms_p99", 23935),
    ("vllm-prefix-cache", "NVIDIA L40S", "on-p4000-c64", "cost_ratio_off_vs_on", 7.5),
    ("ddp-scaling", "NVIDIA RTX A6000", "355m-4gpu-both", "tokens_per_s", 99152),
    ("ddp-scaling", "NVIDIA RTX A6000", "124m-1gpu", "usd_per_1B_tokens_gpu_share", 2.82),
])
def test_a_run_finds_the_posts_number_for_its_gpu_class(workload, gpu, setup, metric, value):
    published = reference.published_for(workload, gpu, setup, metric)
    assert published is not None
    assert published.value == pytest.approx(value)


@pytest.mark.parametrize(("workload", "gpu", "setup", "metric"), [
    ("train-compile", "NVIDIA GeForce RTX 5090", "eager-eager", "step_ms"),  # the post's OOM
    ("finetune", "NVIDIA L40S", "full-mb8", "train_s"),  # the post's OOM
    ("vllm-serving", "NVIDIA H100 80GB HBM3", "c64", "output_tokens_per_s"),  # an SXM H100 is not the post's PCIe
    ("sdxl", "NVIDIA RTX 6000 Ada Generation", "eager-b1", "s_per_image"),  # not an RTX A6000
])
def test_no_number_where_the_post_has_none_for_that_gpu_class(workload, gpu, setup, metric):
    assert reference.published_for(workload, gpu, setup, metric) is None


def test_an_a100_is_not_compared_with_the_a10_post():
    assert reference.published_for("ollama-vs-vllm", "NVIDIA A100 80GB PCIe", "vllm-bf16-u1",
                                   "output_tokens_per_s") is None
