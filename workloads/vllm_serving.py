"""vLLM serving cost: Qwen2.5-7B-Instruct tokens/s, latency and $ per 1M output tokens at concurrency 1-64.

Study: vLLM 0.11.0, --dtype bfloat16 --max-model-len 4096 --gpu-memory-utilization 0.90, everything else
default; `vllm bench serve` random prompts, 512 tokens in and exactly 256 out (--ignore-eos), concurrency
1, 8, 32 and 64 (16, 64, 192 and 320 prompts), seed 42, client on the same machine. One server for the
four levels; its time to ready and the first chat reply are reported with c1. Each level's prompts are
its own (a seed from 42 and the level: one seed for all would make c8 re-send c1's prompts into the prefix
cache). Cost per 1M output tokens comes from output_tokens_per_s and the hourly price (the catalog's cost
basis). Each level is judged at the latency target (config slo_ttft_p99_ms, slo_tpot_p99_ms: MLPerf's
Llama-3.1-8B Server values by default): goodput, and the highest level that met it, with its cost per 1M
tokens (gpubench/loadgen/slo.py). Not the post's: the rate-search setup finds the highest Poisson arrival rate
whose p99s meet the target (gpubench/loadgen/search.py: every request at once for the start, then doubled or halved to
a bracket and bisected to search_tolerance, search_requests a probe), and measures that rate once more as its result.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.config_fields import param
from gpubench.workload import ConfigError, SetupContext
from gpubench.workloads import serving_common as common


@dataclass
class Config(common.ServingConfig):
    max_model_len: int = param(4096, "vLLM's --max-model-len, tokens", min=16)
    input_tokens: int = param(512, "prompt tokens per request", min=1)
    output_tokens: int = param(256, "tokens generated per request", min=1)
    seed: int = param(42, "random seed of the prompts", min=0)
    search_requests: int = param(1000, "rate-search: timed requests a probe (its p99s rest on them)", min=1)
    search_tolerance: float = param(0.05, "rate-search: stop when the lowest failing rate is within this share above"
                                    " the highest passing one", min=0.001, max=1)
    search_max_probes: int = param(10, "rate-search: loads the search may run, the first (every request at once)"
                                   " included", min=2, max=64)

    def __post_init__(self):
        if self.input_tokens + self.output_tokens > self.max_model_len:
            raise ConfigError(f"input_tokens {self.input_tokens} + output_tokens {self.output_tokens} is more than"
                              f" max_model_len {self.max_model_len}")


SMOKE = {"model_shape": "tiny", "enforce_eager": True, "cpu_kvcache_gib": 1, "max_model_len": 1024,
         "input_tokens": 64, "output_tokens": 16, "max_requests": 6, "search_tolerance": 0.5, "search_max_probes": 5}

HEADLINE = [  # the post's table columns, in its order
    "output_tokens_per_s", "per_user_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99", "usd_per_1M_output_tokens",
    "server_ready_s", "first_chat_reply_s", "goodput_tokens_per_s", "slo_met", "slo_max_users",
    "slo_usd_per_1M_output_tokens",
    "slo_max_rate",  # not the post's: the rate-search setup's answer
    "tokens_streamed_pct",  # not the post's: under 100 flags a result (serving_common)
]

METRICS = common.METRICS_COMMON

LEVELS = {"c1": (1, 16), "c8": (8, 64), "c32": (32, 192), "c64": (64, 320)}  # concurrency, prompts
SEARCH = "rate-search"
SETUPS = {**LEVELS, SEARCH: "the highest Poisson rate at the latency target"}


SETUP_NOTES = {**{name: f"vLLM, {users} concurrent requests, {prompts} prompts" for name, (users, prompts) in
                  LEVELS.items()},
               SEARCH: "vLLM, the highest Poisson arrival rate whose p99 TTFT and TPOT meet the latency target (MLPerf"
                       " Server by default), found by search; search_requests a probe"}

table_notes = common.table_notes


def weights_for(setup: str, config: Config) -> list[str]:
    return common.weights_for(config)


def session_key(setup: str, config: Config) -> str:
    return "vllm"


def open_session(key: str, config: Config, ctx: SetupContext):
    return common.vllm_session(config, ctx, max_model_len=config.max_model_len)


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    if setup == SEARCH:
        return common.search_rate(ctx.session, ctx, level=setup, seed=config.seed, target=common.slo.of_config(config),
                                  tolerance=config.search_tolerance, max_probes=config.search_max_probes,
                                  endpoint="completions", requests=common.capped(config, config.search_requests),
                                  input_tokens=config.input_tokens, output_tokens=config.output_tokens,
                                  ignore_eos=True)
    users, prompts = LEVELS[setup]
    return common.measure_load(ctx.session, ctx, endpoint="completions", users=users,
                               requests=common.capped(config, prompts), input_tokens=config.input_tokens,
                               output_tokens=config.output_tokens, ignore_eos=True, level=setup, seed=config.seed,
                               target=common.slo.of_config(config))


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """The highest concurrency that met the latency target, and its throughput and cost there."""
    return common.sweep_at_target(config, results, {setup: users for setup, (users, _) in LEVELS.items()})
