"""vLLM online FP8 vs bf16 on one GPU: throughput, latency, startup sizes and GSM8K accuracy.

Study: Qwen/Qwen2.5-7B-Instruct's bf16 checkpoint in both modes, vLLM 0.11.0 --dtype bfloat16
--max-model-len 4096 --gpu-memory-utilization 0.90, plus --quantization fp8 (weights converted at load
time, per-tensor scale, dynamic activation scales; KV cache stays bf16). A fresh server per mode. Load:
`vllm bench serve` random prompts, 512 in and exactly 256 out (--ignore-eos), concurrency 1, 8, 32, 64
(16, 64, 192, 320 prompts), seed 42 (each level's prompts its own, the same for both modes). Quality:
the first 300 GSM8K test questions, zero-shot, greedy, up to 768 output tokens, the answer from the
`#### <answer>` line, 64 requests in flight.
Derived: FP8's speed-up over bf16 at each concurrency, and where the two modes' GSM8K answers differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.config_fields import param
from gpubench.workload import ConfigError, MetricDef, SetupContext
from gpubench.workloads import serving_common as common


@dataclass
class Config(common.ServingConfig):
    max_model_len: int = param(4096, "vLLM's --max-model-len, tokens", min=16)
    input_tokens: int = param(512, "prompt tokens per request", min=1)
    output_tokens: int = param(256, "tokens generated per request", min=1)
    seed: int = param(42, "random seed of the prompts", min=0)
    fp8_quantization: str = param("fp8", "the FP8 mode's --quantization; empty: none (the CPU smoke)")
    gsm8k_questions: int = param(300, "GSM8K questions scored", min=0)
    gsm8k_concurrency: int = param(64, "GSM8K requests in flight", min=1)
    gsm8k_max_tokens: int = param(768, "max tokens per GSM8K answer", min=1)

    def __post_init__(self):
        if self.input_tokens + self.output_tokens > self.max_model_len:
            raise ConfigError(f"input_tokens {self.input_tokens} + output_tokens {self.output_tokens} is more than"
                              f" max_model_len {self.max_model_len}")


# vLLM's CPU build has no FP8 kernels (its static_scaled_fp8_quant op is a stub), so the smoke's "fp8" server
# runs without --quantization: the same two sessions, loads, GSM8K passes and derived metrics, bf16 twice.
SMOKE = {"model_shape": "tiny", "enforce_eager": True, "cpu_kvcache_gib": 1, "max_model_len": 1024,
         "input_tokens": 64, "output_tokens": 16, "max_requests": 4, "gsm8k_questions": 4, "gsm8k_concurrency": 4,
         "gsm8k_max_tokens": 16, "fp8_quantization": ""}

LEVELS = {"c1": (1, 16), "c8": (8, 64), "c32": (32, 192), "c64": (64, 320)}  # concurrency, prompts
SETUPS = {f"{mode}-{name}": (mode, level) for mode in ("bf16", "fp8") for name, level in
          [*LEVELS.items(), ("gsm8k", None)]}

SETUP_NOTES = {
    f"{mode}-{name}": (f"vLLM, {what}, " + (f"{LEVELS[name][0]} concurrent requests, {LEVELS[name][1]} prompts"
                                           if name in LEVELS else "GSM8K accuracy pass"))
    for mode, what in (("bf16", "bf16 weights"), ("fp8", "--quantization fp8 (weights FP8 on the fly)"))
    for name in [*LEVELS, "gsm8k"]
}


HEADLINE = [  # the post's table columns, in its order
    "output_tokens_per_s", "per_user_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99", "usd_per_1M_output_tokens",
    "gsm8k_correct", "gsm8k_accuracy", "gsm8k_wall_s", "weights_gib", "kv_cache_gib", "kv_cache_tokens",
    "server_ready_s", "slo_max_users", "slo_usd_per_1M_output_tokens",
    "tokens_streamed_pct",  # not the post's: under 100 flags a result (serving_common)
]

METRICS = {
    **common.METRICS_COMMON, **common.DISAGREEMENT_METRICS,
    "fp8_speedup_output_tokens_per_s": MetricDef(
        "x", "higher", "FP8 output tokens/s over bf16's at the same concurrency"),
    "fp8_speedup_per_user_tokens_per_s": MetricDef(
        "x", "higher", "FP8 per-user tokens/s over bf16's at the same concurrency"),
}


table_notes = common.table_notes


def weights_for(setup: str, config: Config) -> list[str]:
    return common.weights_for(config)


def session_key(setup: str, config: Config) -> str:
    return SETUPS[setup][0]


def open_session(key: str, config: Config, ctx: SetupContext):
    quantization = config.fp8_quantization if key == "fp8" else ""
    return common.vllm_session(config, ctx, max_model_len=config.max_model_len, quantization=quantization)


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    _, level = SETUPS[setup]
    name = setup.split("-", 1)[1]  # bf16 and fp8 send the same prompts at a level
    if level is None:
        return common.measure_gsm8k(ctx.session, ctx, questions=config.gsm8k_questions,
                                    concurrency=config.gsm8k_concurrency, max_tokens=config.gsm8k_max_tokens)
    users, prompts = level
    return common.measure_load(ctx.session, ctx, endpoint="completions", users=users,
                               requests=common.capped(config, prompts), input_tokens=config.input_tokens,
                               output_tokens=config.output_tokens, ignore_eos=True, level=name, seed=config.seed,
                               target=common.slo.of_config(config))


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """FP8 against bf16 per level and on GSM8K; per precision, the highest level that met the latency target."""
    at_target = [common.sweep_at_target(config, results, {f"{mode}-{name}": users for name, (users, _) in
                                                           LEVELS.items()}) for mode in ("bf16", "fp8")]
    ok = common.by_setup(results)
    out: dict[str, dict[str, float]] = {}
    for name in LEVELS:
        bf16, fp8 = ok.get(f"bf16-{name}"), ok.get(f"fp8-{name}")
        for metric in ("output_tokens_per_s", "per_user_tokens_per_s"):
            base, new = common.value(bf16, metric), common.value(fp8, metric)
            if base and new:
                out.setdefault(f"fp8-{name}", {})[f"fp8_speedup_{metric}"] = new / base
    bf16, fp8 = ok.get("bf16-gsm8k"), ok.get("fp8-gsm8k")
    if bf16 and fp8 and "gsm8k_answers" in bf16.info and "gsm8k_answers" in fp8.info:
        out["fp8-gsm8k"] = common.gsm8k_disagreement(bf16.info, fp8.info)
    return common.merged(out, *at_target)
