"""derive() turns one repeat's results into the study's columns: speed-up and efficiency against the 1-GPU
run of the same recipe, $ per 1B tokens for the GPUs used, and the all-reduce time a step's gradients need.
Checked against the post's own 124M/355M tables (4x RTX A6000, $2.64/h for the machine)."""

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.pricing import cost_metrics
from gpubench.schema import Metric, SetupResult
from gpubench.workloads import ddp_scaling

SPEC = WORKLOADS.get("ddp-scaling")
MACHINE_USD_PER_HOUR = 2.64
POST_TOKENS_PER_S = {  # "The fixes, on 4 GPUs" and its footnote
    "124m-1gpu": 64_912, "124m-1gpu-accum4": 66_189, "124m-4gpu": 129_032, "124m-4gpu-bf16": 172_144,
    "124m-4gpu-accum4": 211_834, "124m-4gpu-both": 234_175,
    "355m-1gpu": 27_109, "355m-1gpu-accum4": 27_893, "355m-4gpu-both": 99_152,
}


def result(setup, metrics, info=None):
    row = SetupResult(run_id="r", setup=setup, repeat=1, status="ok", info=info or {},
                      metrics={k: Metric(value=v, unit=ddp_scaling.METRICS[k].unit) for k, v in metrics.items()})
    row.metrics.update(cost_metrics(SPEC.cost, row.metrics, MACHINE_USD_PER_HOUR))  # what the runner adds first
    return row


@pytest.fixture
def derived():
    results = [result(s, {"tokens_per_s": v}, {"host_gpus": 4}) for s, v in POST_TOKENS_PER_S.items()]
    results[2].metrics["gradient_mb_per_step"] = Metric(value=124.44 * 4, unit="MB")  # 124M fp32 gradients
    results.append(result("allreduce-4gpu", {"algbw_median_gbps": 4.3 / 1.5}))  # the post: busbw 4.3 GB/s
    return ddp_scaling.derive(ddp_scaling.Config(), results)


def test_speedup_is_against_one_gpu_with_the_same_recipe(derived):
    speedups = {s: round(v["speedup"], 2) for s, v in derived.items() if s.startswith("124m")}
    assert speedups == {"124m-1gpu": 1.0, "124m-1gpu-accum4": 1.0, "124m-4gpu": 1.99, "124m-4gpu-bf16": 2.65,
                        "124m-4gpu-accum4": 3.20, "124m-4gpu-both": 3.54}
    # the footnote: "both" is 88% and 89% scaling efficiency against accumulation on one GPU
    assert round(derived["124m-4gpu-both"]["scaling_efficiency_pct"]) == 88
    assert round(derived["355m-4gpu-both"]["scaling_efficiency_pct"]) == 89


def test_cost_counts_the_gpus_a_setup_used(derived):
    share = {s: round(v["usd_per_1B_tokens_gpu_share"], 2) for s, v in derived.items() if s.startswith("124m-")}
    # the 1-GPU row is one GPU's share ($0.66/h), the 4-GPU rows the whole machine
    assert share["124m-1gpu"] == 2.82
    assert [share[s] for s in ("124m-4gpu", "124m-4gpu-bf16", "124m-4gpu-accum4", "124m-4gpu-both")] == [
        5.68, 4.26, 3.46, 3.13]


def test_gradient_bytes_over_measured_bandwidth_is_the_communication_time(derived):
    # "about 500 MB per step ... at 2.9 GB/s of algorithm bandwidth that is roughly 170 ms"
    assert derived["124m-4gpu"]["allreduce_ms_est"] == pytest.approx(170, rel=0.03)
    assert "allreduce_ms_est" not in derived["124m-4gpu-both"]  # its gradient size was not reported here


def test_missing_baseline_or_price_gives_no_made_up_number():
    lone = result("124m-2gpu", {"tokens_per_s": 77_287}, {"host_gpus": 0})
    assert ddp_scaling.derive(ddp_scaling.Config(), [lone]) == {}
