"""The serving workloads' `derive`: cross-setup metrics computed from result records, as the runner calls it."""

from __future__ import annotations

import pytest

from gpubench.loadgen import gsm8k
from gpubench.schema import Metric, SetupResult
from gpubench.workloads import ollama_vs_vllm, vllm_fp8, vllm_prefix_cache


def result(setup: str, info: dict | None = None, **metrics: float) -> SetupResult:
    return SetupResult(run_id="r", setup=setup, repeat=1, status="ok", info=info or {},
                       metrics={k: Metric(value=v, unit="u") for k, v in metrics.items()})


def answers(replies: list[str]) -> dict:
    """A result's info as measure_gsm8k records it: scored by loadgen.gsm8k on the first GSM8K questions."""
    scored = gsm8k.score(gsm8k.load_questions(len(replies)), replies, wall_s=1.0)
    return {"gsm8k_answers": [[a.expected, a.got, a.correct] for a in scored.answers]}


def test_fp8_speedups_per_level_and_gsm8k_disagreements():
    truth = [q.answer for q in gsm8k.load_questions(4)]
    bf16 = answers([f"#### {truth[0]}", f"#### {truth[1]}", "#### 1", "so 5"])
    fp8 = answers([f"#### {truth[0]}", "#### 7", f"#### {truth[2]}", "the answer is 5"])
    out = vllm_fp8.derive(vllm_fp8.Config(), [
        result("bf16-c1", output_tokens_per_s=104, per_user_tokens_per_s=105),
        result("fp8-c1", output_tokens_per_s=160, per_user_tokens_per_s=162),
        result("bf16-c64", output_tokens_per_s=4401), result("fp8-c64", output_tokens_per_s=6147),
        result("bf16-gsm8k", bf16), result("fp8-gsm8k", fp8),
    ])
    assert out["fp8-c1"] == {"fp8_speedup_output_tokens_per_s": pytest.approx(160 / 104),
                             "fp8_speedup_per_user_tokens_per_s": pytest.approx(162 / 105)}
    assert out["fp8-c64"] == {"fp8_speedup_output_tokens_per_s": pytest.approx(6147 / 4401)}  # no per-user: left out
    assert "fp8-c8" not in out  # neither mode ran it
    # Questions 2 and 3 differ (bf16 alone right on 2, FP8 alone on 3); 1 and 4 agree (4: same wrong 5)
    assert out["fp8-gsm8k"] == {"gsm8k_same_answer": 2, "gsm8k_different_answer": 2,
                                "gsm8k_only_baseline_correct": 1, "gsm8k_only_this_correct": 1}
    for name, values in out.items():
        assert set(values) <= set(vllm_fp8.METRICS), name


def test_prefix_cache_cost_ratio_is_on_over_off_throughput():
    out = vllm_prefix_cache.derive(vllm_prefix_cache.Config(), [
        result("on-p4000-c64", requests_per_s=14.86), result("off-p4000-c64", requests_per_s=1.99),
        result("on-p1000-c16", requests_per_s=5.27),  # its off run failed: no ratio
    ])
    assert out == {"on-p4000-c64": {"cost_ratio_off_vs_on": pytest.approx(14.86 / 1.99)}}


def test_ollama_builds_compared_with_vllm_bf16_answers():
    truth = [q.answer for q in gsm8k.load_questions(3)]
    bf16 = answers([f"#### {truth[0]}", f"#### {truth[1]}", "#### 0"])
    q4 = answers([f"#### {truth[0]}", "#### 0", "#### 0"])
    out = ollama_vs_vllm.derive(ollama_vs_vllm.Config(), [result("ollama-q4km-gsm8k", q4),
                                                          result("vllm-bf16-gsm8k", bf16)])
    assert out == {"ollama-q4km-gsm8k": {"gsm8k_same_answer": 2, "gsm8k_different_answer": 1,
                                         "gsm8k_only_baseline_correct": 1, "gsm8k_only_this_correct": 0}}
    assert ollama_vs_vllm.derive(ollama_vs_vllm.Config(), [result("ollama-q4km-gsm8k", q4)]) == {}


def test_llamacpp_builds_compared_with_vllm_bf16_answers_beside_ollamas():
    truth = [q.answer for q in gsm8k.load_questions(3)]
    bf16 = answers([f"#### {truth[0]}", f"#### {truth[1]}", "#### 0"])
    q4 = answers([f"#### {truth[0]}", "#### 0", "#### 0"])
    q8 = answers([f"#### {truth[0]}", f"#### {truth[1]}", f"#### {truth[2]}"])
    out = ollama_vs_vllm.derive(ollama_vs_vllm.Config(), [
        result("llamacpp-q4km-gsm8k", q4), result("llamacpp-q8-gsm8k", q8), result("ollama-q8-gsm8k", q8),
        result("vllm-bf16-gsm8k", bf16)])
    assert out["llamacpp-q4km-gsm8k"] == {"gsm8k_same_answer": 2, "gsm8k_different_answer": 1,
                                          "gsm8k_only_baseline_correct": 1, "gsm8k_only_this_correct": 0}
    assert out["llamacpp-q8-gsm8k"] == out["ollama-q8-gsm8k"] == {
        "gsm8k_same_answer": 2, "gsm8k_different_answer": 1, "gsm8k_only_baseline_correct": 0,
        "gsm8k_only_this_correct": 1}
