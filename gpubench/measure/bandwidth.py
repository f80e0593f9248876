"""Achieved memory bandwidth of a decode: the bytes one step must read from device memory over the step's time.

A decode step of a batch of running sequences reads the weights once and each sequence's KV cache so far:

    bytes per step = weight_bytes + sequences x context_tokens x kv_bytes_per_token
    achieved GB/s  = bytes per step / step time / 1e9

It is a model, a lower bound of the traffic: activations, prefill chunks sharing the step, re-reads and
cache misses are not counted. The serving workloads use it with TPOT as the step time (serving_common).
"""

from __future__ import annotations

from collections.abc import Iterable

DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "fp8_e4m3": 1,
               "fp8_e5m2": 1, "float8_e4m3fn": 1, "int8": 1}


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype_bytes: float) -> float:
    """K and V of one token in every layer."""
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def model_kv_bytes_per_token(config: dict, dtype_bytes: float) -> float:
    """kv_bytes_per_token from a Hugging Face decoder config (config.json as a dict)."""
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return kv_bytes_per_token(config["num_hidden_layers"], config.get("num_key_value_heads") or heads, head_dim,
                              dtype_bytes)


def decode_bytes_per_step(weight_bytes: float, sequences: float, context_tokens: float,
                          kv_bytes_per_token: float) -> float:
    """Bytes a decode step reads: the weights once, plus every sequence's KV cache of context_tokens."""
    return weight_bytes + sequences * context_tokens * kv_bytes_per_token


def achieved_gbps(bytes_per_step: float, step_s: float) -> float:
    return bytes_per_step / step_s / 1e9


def mean_in_flight(intervals: Iterable[tuple[float, float]]) -> float:
    """Mean number of intervals open while at least one is: their summed length over the length of their union
    (the mean batch of decoding sequences, from each request's first to last token)."""
    spans = sorted((start, end) for start, end in intervals if end > start)
    total = sum(end - start for start, end in spans)
    covered, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return total / covered if covered else 0.0
