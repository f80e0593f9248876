"""vLLM automatic prefix caching on vs off, with a shared 1,000- or 4,000-token system prompt.

Study: Qwen/Qwen2.5-7B-Instruct bf16, vLLM 0.11.0 --max-model-len 8192 --gpu-memory-utilization 0.90;
two modes, default (prefix caching on) and --no-enable-prefix-caching, a fresh server per mode. Load:
`vllm bench serve` random dataset, every request one shared prefix (1,000 or 4,000 tokens) followed by
200 unique tokens, exactly 128 output tokens (--ignore-eos), concurrency 1, 16 and 64 (24, 160 and 384
requests), seed prefix + concurrency. The hit rate is vLLM's own /metrics counters (prefix_cache_hits /
prefix_cache_queries) read before and after every run.
Derived: the off/on ratio of $ per 1,000 requests (= requests/s on / off, whatever the price).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.config_fields import param
from gpubench.workload import ConfigError, MetricDef, SetupContext
from gpubench.workloads import serving_common as common


@dataclass
class Config(common.ServingConfig):
    max_model_len: int = param(8192, "vLLM's --max-model-len, tokens", min=16)
    prefix_short: int = param(1000, "the p1000 setups' shared prefix, tokens", min=1)
    prefix_long: int = param(4000, "the p4000 setups' shared prefix, tokens", min=1)
    unique_tokens: int = param(200, "unique prompt tokens after the prefix", min=1)
    output_tokens: int = param(128, "tokens generated per request", min=1)
    seed: int = param(42, "random seed of the prompts; each load level's prompts and shared prefix are its own",
                      min=0)

    def __post_init__(self):
        longest = max(self.prefix_short, self.prefix_long) + self.unique_tokens + self.output_tokens
        if longest > self.max_model_len:
            raise ConfigError(f"the longest request ({longest} tokens: prefix, unique_tokens, output_tokens) is more"
                              f" than max_model_len {self.max_model_len}")


SMOKE = {"model_shape": "tiny", "enforce_eager": True, "cpu_kvcache_gib": 1, "max_model_len": 2048,
         "prefix_short": 256, "prefix_long": 1024, "unique_tokens": 32, "output_tokens": 8, "max_requests": 6}

LEVELS = {"c1": (1, 24), "c16": (16, 160), "c64": (64, 384)}  # concurrency, requests
SETUPS = {f"{mode}-{prefix}-{name}": (mode, prefix, level) for mode in ("on", "off") for prefix in ("p1000", "p4000")
          for name, level in LEVELS.items()}

SETUP_NOTES = {
    f"{mode}-{prefix}-{name}": (f"vLLM prefix caching {mode}, a shared {prefix[1:]}-token system prompt,"
                                f" {LEVELS[name][0]} concurrent requests")
    for mode in ("on", "off") for prefix in ("p1000", "p4000") for name in LEVELS
}


HEADLINE = [  # the post's table columns, in its order
    "requests_per_s", "output_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "prefix_cache_hit_rate",
    "usd_per_1k_requests", "cost_ratio_off_vs_on",
    "tokens_streamed_pct",  # not the post's: under 100 flags a result (serving_common)
]

METRICS = {
    **common.METRICS_COMMON,
    "cost_ratio_off_vs_on": MetricDef(
        "x", "higher", "$ per 1k requests with the cache off over on, same prefix and concurrency"),
}


table_notes = common.table_notes


def weights_for(setup: str, config: Config) -> list[str]:
    return common.weights_for(config)


def session_key(setup: str, config: Config) -> str:
    return SETUPS[setup][0]


def open_session(key: str, config: Config, ctx: SetupContext):
    # "on" is vLLM's default, as in the study (no flag); "off" is --no-enable-prefix-caching.
    return common.vllm_session(config, ctx, max_model_len=config.max_model_len,
                               prefix_caching=None if key == "on" else False)


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    _, prefix, (users, requests) = SETUPS[setup]
    prefix_tokens = config.prefix_short if prefix == "p1000" else config.prefix_long
    return common.measure_load(ctx.session, ctx, endpoint="completions", users=users,
                               requests=common.capped(config, requests), prefix_tokens=prefix_tokens,
                               input_tokens=config.unique_tokens, output_tokens=config.output_tokens,
                               ignore_eos=True, level=setup.split("-", 1)[1], seed=config.seed,
                               target=common.slo.of_config(config))


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    ok = common.by_setup(results)
    out: dict[str, dict[str, float]] = {}
    for setup in SETUPS:
        if not setup.startswith("on-"):
            continue
        on = common.value(ok.get(setup), "requests_per_s")
        off = common.value(ok.get("off-" + setup[3:]), "requests_per_s")
        if on and off:
            out[setup] = {"cost_ratio_off_vs_on": on / off}
    at_target = [common.sweep_at_target(config, results, {f"{mode}-{prefix}-{name}": users for name, (users, _) in
                                                           LEVELS.items()})
                 for mode in ("on", "off") for prefix in ("p1000", "p4000")]
    return common.merged(out, *at_target)
