"""Ollama (Q4_K_M, Q8_0 GGUF) vs vLLM (bf16) serving Qwen2.5-7B-Instruct on one 24 GB card: speed and GSM8K.

Study: Ollama 0.40.12 with OLLAMA_NUM_PARALLEL=16 OLLAMA_CONTEXT_LENGTH=4096 OLLAMA_KEEP_ALIVE=-1, the tags
qwen2.5:7b-instruct-q4_K_M and -q8_0 pulled (timed); vLLM 0.11.0 --dtype bfloat16 --max-model-len 4096
--gpu-memory-utilization 0.92. One client for all three, each server's /v1/chat/completions, streamed with
usage: 32 fixed "explain X to a new engineer" prompts, temperature 0, max_tokens 256, seed 0; 1, 4 and
16 users (12, 32 and 96 requests), one warm-up request first. Quality: the first 250 GSM8K test
questions, zero-shot, greedy, up to 512 tokens, 16 at a time, the answer read from the last number.
GPU memory in use is NVML's (device-wide) during the GSM8K pass. Derived: each GGUF build's GSM8K
answers against vLLM bf16's (the baseline): how many differ, and who was right where they did.
Each server is its own session, stopped before the next starts.

The llama.cpp setups are the GGUF half where no `ollama` binary is: Ollama's runner is llama.cpp's server, and
`llamacpp-*` run llama.cpp's own llama-server (tools/llamacpp_build.sh builds it) with Ollama's settings mapped
(OLLAMA_NUM_PARALLEL slots of OLLAMA_CONTEXT_LENGTH tokens each, every layer on the GPU, the model loaded at start
and kept) on GGUFs its own converter and quantizer made (gpubench/servers/llamacpp.py, gguf.py). Each of their
results names the engine in info["engine"].
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.config_fields import param
from gpubench.workload import SetupContext
from gpubench.workloads import serving_common as common

TOPICS = (
    "database indexes", "HTTP caching", "TCP congestion control", "garbage collection", "DNS resolution",
    "load balancing", "message queues", "database transactions", "container images", "Kubernetes pods",
    "TLS handshakes", "rate limiting", "consistent hashing", "eventual consistency", "feature flags",
    "blue-green deployments", "unit testing", "code review", "memory leaks", "race conditions", "deadlocks",
    "connection pooling", "CDNs", "OAuth tokens", "idempotent APIs", "circuit breakers", "observability",
    "log aggregation", "schema migrations", "GPU memory bandwidth", "CPU caches", "virtual memory",
)
PROMPTS = tuple(f"Explain {topic} to a new engineer who just joined the team. Keep it practical and give one"
                f" concrete example." for topic in TOPICS)


@dataclass
class Config(common.ServingConfig):
    gpu_memory_utilization: float = param(0.92, "vLLM's --gpu-memory-utilization", min=0.01, max=1)
    max_model_len: int = param(4096, "vLLM's --max-model-len, tokens", min=16)
    output_tokens: int = param(256, "tokens generated per request", min=1)
    gsm8k_questions: int = param(250, "GSM8K questions scored", min=0)
    gsm8k_concurrency: int = param(16, "GSM8K requests in flight", min=1)
    gsm8k_max_tokens: int = param(512, "max tokens per GSM8K answer", min=1)
    ollama_bin: str = param("ollama", "the ollama executable")
    ollama_q4_tag: str = param("qwen2.5:7b-instruct-q4_K_M", "the Q4 model's Ollama tag")
    ollama_q8_tag: str = param("qwen2.5:7b-instruct-q8_0", "the Q8 model's Ollama tag")
    ollama_num_parallel: int = param(16, "OLLAMA_NUM_PARALLEL (llama.cpp: --parallel, its slots)", min=1)
    ollama_context_length: int = param(4096, "OLLAMA_CONTEXT_LENGTH, tokens (llama.cpp: each slot's context)",
                                       min=256)
    ollama_keep_alive: str = param("-1", "OLLAMA_KEEP_ALIVE (-1: forever)")
    ollama_models: str = param("", "OLLAMA_MODELS; empty: the environment's (the image: /cache/ollama)")
    llamacpp_dir: str = param("", "a llama.cpp build (a folder with bin/llama-server); empty: $GPUBENCH_LLAMACPP_DIR,"
                                  " the source tree's .llama-cpp/ (tools/llamacpp_build.sh) or llama-server on PATH")
    llamacpp_batch: int = param(512, "llama-server --batch-size (Ollama's num_batch; llama.cpp's default is 2048)",
                                min=1)
    llamacpp_flash_attn: str = param("auto", "llama-server --flash-attn (auto: where GPU and model support it)",
                                     choices=("auto", "on", "off"))


SMOKE = {"model_shape": "tiny", "enforce_eager": True, "cpu_kvcache_gib": 1, "max_model_len": 1024,
         "output_tokens": 16, "max_requests": 6, "gsm8k_questions": 4, "gsm8k_concurrency": 4,
         "gsm8k_max_tokens": 16}

SERVERS = ("ollama-q4km", "ollama-q8", "llamacpp-q4km", "llamacpp-q8", "vllm-bf16")
GGUF_BUILDS = {"ollama-q4km": "Q4_K_M", "ollama-q8": "Q8_0", "llamacpp-q4km": "Q4_K_M", "llamacpp-q8": "Q8_0"}
LEVELS = {"u1": (1, 12), "u4": (4, 32), "u16": (16, 96)}  # users, requests
SETUPS = {f"{server}-{name}": (server, level) for server in SERVERS for name, level in
          [*LEVELS.items(), ("gsm8k", None)]}

SETUP_NOTES = {
    f"{server}-{name}": (f"{what}, " + (f"{LEVELS[name][0]} concurrent user(s), {LEVELS[name][1]} requests"
                                        if name in LEVELS else "GSM8K accuracy pass"))
    for server, what in (("ollama-q4km", "Ollama, Q4_K_M GGUF"), ("ollama-q8", "Ollama, Q8_0 GGUF"),
                         ("llamacpp-q4km", "llama.cpp server (Ollama's runner, no Ollama), Q4_K_M GGUF"),
                         ("llamacpp-q8", "llama.cpp server (Ollama's runner, no Ollama), Q8_0 GGUF"),
                         ("vllm-bf16", "vLLM, bf16 weights"))
    for name in [*LEVELS, "gsm8k"]
}


HEADLINE = [  # the post's table columns, in its order
    "output_tokens_per_s", "per_user_tokens_per_s", "ttft_ms_p50", "ttft_ms_p95", "usd_per_1M_output_tokens",
    "gpu_memory_in_use_gib", "gsm8k_accuracy", "gsm8k_correct", "gsm8k_wall_s",
    "tokens_streamed_pct",  # not the post's: under 100 flags a result (serving_common)
]

METRICS = {**common.METRICS_COMMON, **common.DISAGREEMENT_METRICS}


table_notes = common.table_notes


def weights_for(setup: str, config: Config) -> list[str]:
    """vLLM and llama.cpp load the study's checkpoint (llama.cpp after converting it); Ollama pulls its own GGUFs."""
    return [] if SETUPS[setup][0].startswith("ollama-") else common.weights_for(config)


def session_key(setup: str, config: Config) -> str:
    return SETUPS[setup][0]


def open_session(key: str, config: Config, ctx: SetupContext):
    if key == "vllm-bf16":
        return common.vllm_session(config, ctx, max_model_len=config.max_model_len)
    if key.startswith("llamacpp-"):
        return common.llamacpp_session(config, ctx, quant=GGUF_BUILDS[key], llamacpp_dir=config.llamacpp_dir,
                                       parallel=config.ollama_num_parallel, ctx_per_slot=config.ollama_context_length,
                                       batch=config.llamacpp_batch, flash_attn=config.llamacpp_flash_attn)
    tag = config.ollama_q4_tag if key == "ollama-q4km" else config.ollama_q8_tag
    return common.ollama_session(ctx, tag, binary=config.ollama_bin, num_parallel=config.ollama_num_parallel,
                                 context_length=config.ollama_context_length, keep_alive=config.ollama_keep_alive,
                                 models_dir=config.ollama_models)


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    _, level = SETUPS[setup]
    if level is None:
        return common.measure_gsm8k(ctx.session, ctx, questions=config.gsm8k_questions,
                                    concurrency=config.gsm8k_concurrency, max_tokens=config.gsm8k_max_tokens)
    users, requests = level
    return common.measure_load(ctx.session, ctx, endpoint="chat", users=users,
                               requests=common.capped(config, requests), prompts=PROMPTS,
                               output_tokens=config.output_tokens, temperature=0.0, extra_body={"seed": 0},
                               target=common.slo.of_config(config), level=setup.rsplit("-", 1)[1], seed=0)


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """Each GGUF build's GSM8K answers against vLLM bf16's; per server, the highest load that met the target."""
    at_target = [common.sweep_at_target(config, results, {f"{server}-{name}": users for name, (users, _) in
                                                           LEVELS.items()}) for server in SERVERS]
    ok = common.by_setup(results)
    baseline = ok.get("vllm-bf16-gsm8k")
    out = {}
    for server in GGUF_BUILDS:
        other = ok.get(f"{server}-gsm8k")
        if baseline is not None and "gsm8k_answers" in baseline.info and other is not None \
                and "gsm8k_answers" in other.info:
            out[f"{server}-gsm8k"] = common.gsm8k_disagreement(baseline.info, other.info)
    return common.merged(out, *at_target)
