"""gpubench/measure/bandwidth.py against numbers worked by hand, and serving_common's use of it on load records."""

from __future__ import annotations

import json

import pytest

from gpubench.loadgen.client import RequestRecord
from gpubench.measure import bandwidth, flops
from gpubench.results import verdict
from gpubench.schema import Metric
from gpubench.workloads import serving_common

# Llama-3-8B's attention: 32 layers, 8 KV heads of 128, bf16 -> 2 x 32 x 8 x 128 x 2 = 131,072 B (128 KiB) a token.
LLAMA3_8B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}


def test_kv_bytes_per_token_from_a_config():
    assert bandwidth.model_kv_bytes_per_token(LLAMA3_8B, 2) == 131_072
    # Qwen2.5-7B: 28 layers, 4 KV heads, head 3584 / 28 = 128 -> 57,344 B; FP8 KV halves it
    qwen = {"num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "hidden_size": 3584}
    assert bandwidth.model_kv_bytes_per_token(qwen, 1) == 28_672
    # no num_key_value_heads: multi-head attention, as many KV heads as heads; head_dim given wins
    assert bandwidth.model_kv_bytes_per_token({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64,
                                               "head_dim": 32}, 4) == 2 * 2 * 4 * 32 * 4


def test_a_7b_decode_step_worked_by_hand():
    # 15.2 GB of bf16 weights + 32 users x 1,000 tokens x 131,072 B = 15.2e9 + 4.194304e9 = 19.394304e9 B a step;
    # over a 20 ms TPOT: 969.7152 GB/s, 20.2% of an H200's 4,800 GB/s.
    step = bandwidth.decode_bytes_per_step(15.2e9, 32, 1000, 131_072)
    assert step == 19_394_304_000
    assert bandwidth.achieved_gbps(step, 0.020) == pytest.approx(969.7152)


def test_mean_in_flight_over_the_time_any_is_decoding():
    assert bandwidth.mean_in_flight([(0, 10), (0, 10), (0, 10)]) == 3
    # 0-10 and 5-15 overlap for 5 of the 15 s covered: 20 / 15
    assert bandwidth.mean_in_flight([(0, 10), (5, 15)]) == pytest.approx(20 / 15)
    # a gap with nothing decoding is not averaged in; a contained interval adds its length only
    assert bandwidth.mean_in_flight([(0, 4), (10, 14), (11, 12)]) == pytest.approx(9 / 8)
    assert bandwidth.mean_in_flight([]) == 0


def record(i, sent, ttft, last, prompt, out):
    return RequestRecord(index=i, ok=True, sent=sent, ttft_s=ttft, last_token_s=last, e2e_s=last,
                         prompt_tokens=prompt, completion_tokens=out)


def test_serving_load_records_to_achieved_gbps(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA3_8B, "torch_dtype": "bfloat16"}))
    facts = serving_common.decode_facts(str(tmp_path), "bfloat16", "", {"weights_gib": 14.0})
    assert facts["weight_bytes"] == 14 * 2**30 and facts["kv_bytes_per_token"] == 131_072
    # two requests decoding side by side for 101 tokens: TPOT (2.1 - 0.1) / 100 = 20 ms, 2 sequences,
    # context 1000 + 100 / 2 = 1,050 tokens
    records = [record(0, 0.0, 0.1, 2.1, 1000, 101), record(1, 0.0, 0.1, 2.1, 1000, 101)]
    metrics = {"prompt_tokens_mean": 1000, "completion_tokens_mean": 100}
    info = {}
    out = serving_common.decode_bandwidth(records, metrics, facts, info)
    expected = (14 * 2**30 + 2 * 1050 * 131_072) / 0.020 / 1e9
    assert out["achieved_gbps"] == pytest.approx(expected)
    assert info["bandwidth"]["sequences_in_flight"] == 2 and info["bandwidth"]["context_tokens"] == 1050


def test_quantized_weights_without_a_log_line_are_not_guessed(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA3_8B))
    (tmp_path / "model.safetensors").write_bytes(b"x" * 100)
    assert serving_common.decode_facts(str(tmp_path), "bfloat16", "", {})["weight_bytes"] == 100
    # vLLM --dtype auto: the config's dtype (transformers 5 writes "dtype", older "torch_dtype"), bf16 if none
    assert serving_common.decode_facts(str(tmp_path), "auto", "", {})["kv_dtype"] == "bfloat16"
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA3_8B, "dtype": "float32"}))
    assert serving_common.decode_facts(str(tmp_path), "auto", "", {})["kv_bytes_per_token"] == 2 * 131_072
    facts = serving_common.decode_facts(str(tmp_path), "bfloat16", "fp8", {})
    info = {}
    assert serving_common.decode_bandwidth([record(0, 0, 0.1, 1.1, 10, 11)], {"prompt_tokens_mean": 10,
                                            "completion_tokens_mean": 11}, facts, info) == {}
    assert info["bandwidth"].startswith("not measured: the weights' size")


def test_the_verdict_reads_the_decode_bandwidth_share():
    # the worked 7B step on an H200 (4,800 GB/s datasheet): 969.7 GB/s is 20.2%, not memory-bound, so a GPU 95% busy
    # below that roof is gpu-bound; the same bytes in 6.5 ms (2,983.7 GB/s, 62.2%) are memory-bound
    base = {"util_samples": 100, "gpu_busy_pct": 95, "busiest_thread_pct": 40, "pct_of_peak": 5, "on_gpu": 1}
    for tpot_s, pct, label in ((0.020, 20.2, "gpu-bound"), (0.0065, 62.2, "memory-bound")):
        gbps = bandwidth.achieved_gbps(19_394_304_000, tpot_s)
        achieved = {flops.BANDWIDTH_METRIC: Metric(value=gbps, unit="GB/s", better="higher")}
        share = flops.bandwidth_share(achieved, "NVIDIA H200")
        assert share.value == pytest.approx(pct, abs=0.05)
        assert verdict.judge({**base, flops.BANDWIDTH_PEAK_METRIC: share.value}).label == label
