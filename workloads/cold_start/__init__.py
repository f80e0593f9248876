"""Model cold start: time to first token for Qwen2.5-7B-Instruct from a fresh Hub download or the local cache.

The study's script, one fresh process per start (the worker), timing four phases from before the first
heavy import: Python imports (torch, huggingface_hub.snapshot_download, transformers' Auto classes),
snapshot_download(model, allow_patterns=["*.json", "*.safetensors", "*.txt"]) (a real download, or a
cache check when the files are present), tokenizer + from_pretrained(dtype=bfloat16, device_map="cuda")
up to torch.cuda.synchronize(), and one greedy token for a short chat prompt; total_s is first import to
first token. The runner turns total_s into the GPU cost of the wait (catalog cost basis: seconds per start).

Starts (setups):
- fresh-download: the model's cache folder removed first, then downloaded with the defaults;
- fresh-download-xet-hp: the same with HF_XET_HIGH_PERFORMANCE=1;
- cache-evicted: from the local cache after os.posix_fadvise(DONTNEED) on every blob (no root needed);
- cache-warm: from the local cache with the files in the page cache (read once first if they are not).
With no hub reachable, the fresh downloads are `skipped` with the reason, never timed against nothing.

Beyond the study's table: how much of the checkpoint was in the page cache when the clock started
(mincore; the study could not prove its eviction worked), the load's read bandwidth (checkpoint bytes /
load time) next to a raw sequential read of the same files in the same run, after eviction and again
right after (the study's dd), since the study's point is that a cached load is disk-bound.

Weights: the study's own (found in a Hub cache, or a $GPUBENCH_WEIGHTS_DIR folder), or with --weights
random / --smoke a random checkpoint of the configured shape written first to a folder this workload
owns (reused when the same shape is already there; see checkpoint.py). Fresh downloads go to a
Hub cache folder under the same root, never the user's own cache unless `cache_dir` points there.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from gpubench.config_fields import DEVICE, DTYPES, param
from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.workload import ConfigError, MetricDef, SetupContext, SetupSkipped
from gpubench.workloads.cold_start import checkpoint, hub, pagecache

MODEL_ID = "Qwen/Qwen2.5-7B-Instruct"
TIMED_IMPORTS = ("torch", "huggingface_hub", "transformers")  # what the study's script imports after T0


@dataclass
class Config:
    model_id: str = param(MODEL_ID, "the Hub repo a start loads (and a fresh download fetches)")
    allow_patterns: str = param("*.json,*.safetensors,*.txt",
                                "the repo's files a download fetches, comma-separated globs")
    prompt: str = param("Say hello in five words.", "the chat prompt of the first token")
    max_new_tokens: int = param(1, "tokens generated after loading", min=1)
    dtype: str = param("bfloat16", "the weights' dtype", choices=DTYPES)
    device: str = param("auto", "where it runs", **DEVICE)
    cache_dir: str = param("", "the workload's own folder; empty: $XDG_CACHE_HOME (or ~/.cache)/gpubench/cold-start")
    checkpoint: str = param("auto", "auto: the study's weights (random with --weights random); random: always random",
                            choices=("auto", "random"))
    hidden_size: int = param(3584, "the random checkpoint's shape: Qwen2.5-7B-Instruct's (15.23 GB of bf16 weights)",
                             min=1)
    num_layers: int = param(28, "the random checkpoint's decoder layers", min=1)
    num_heads: int = param(28, "the random checkpoint's attention heads", min=1)
    num_kv_heads: int = param(4, "the random checkpoint's key/value heads", min=1)
    intermediate_size: int = param(18944, "the random checkpoint's MLP inner size", min=1)
    vocab_size: int = param(152064, "the random checkpoint's vocabulary size", min=2)
    shards: int = param(4, "safetensors files the random checkpoint is split into", min=1)
    raw_read: bool = param(True, "after the timed start, read the same files raw, evicted and warm")
    hub_timeout_s: float = param(3.0, "how long to wait for the hub to answer before calling it unreachable", min=0)

    def __post_init__(self):
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ConfigError(f"hidden_size {self.hidden_size}, num_heads {self.num_heads}, num_kv_heads"
                              f" {self.num_kv_heads}: the heads must divide the hidden size, the kv heads the heads")


SMOKE = {
    "model_id": "trl-internal-testing/tiny-Qwen2ForCausalLM-2.5",  # what a fresh download fetches, if a hub answers
    "checkpoint": "random", "hidden_size": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
    "intermediate_size": 128, "vocab_size": 1024,
}

HEADLINE = [  # the post's table columns, in its order
    "import_s", "download_s", "load_to_gpu_s", "first_token_s", "total_s", "usd_per_start", "load_read_gbps",
    "raw_read_gbps",
]

TIMED_PHASES = ("load", "first_token")  # what utilisation is summarised over: the load and first token

METRICS = {
    "import_s": MetricDef("s", "lower", "import torch + transformers in a fresh process"),
    "download_s": MetricDef("s", "lower", "Hub download of the checkpoint (fresh-download setups only)"),
    "load_to_gpu_s": MetricDef("s", "lower", "from_pretrained from local files to weights on the GPU"),
    "first_token_s": MetricDef("s", "lower", "one greedy token from the loaded model, synchronised"),
    "total_s": MetricDef("s", "lower", "process start to first token: the study's headline"),
    "checkpoint_gb": MetricDef("GB", None, "size of the safetensors files loaded"),
    "load_read_gbps": MetricDef("GB/s", "higher", "checkpoint_gb / load_to_gpu_s"),
    "raw_read_gbps": MetricDef("GB/s", "higher", "plain sequential read of the files from disk (cold page cache)"),
    "raw_read_warm_gbps": MetricDef("GB/s", "higher", "the same read with the files in the page cache"),
    "load_vs_raw_read": MetricDef("x", None, "load_to_gpu_s over the raw read time: how much loading adds beyond I/O"),
    "resident_at_start_pct": MetricDef(
        "%", None, "share of the checkpoint already in the page cache when the setup started"),
    "download_gb": MetricDef("GB", None, "bytes downloaded from the Hub"),
    "download_mbps": MetricDef("MB/s", "higher", "download_gb / download_s"),
    "download_pct": MetricDef("%", "lower", "share of total_s spent downloading"),
    "prompt_tokens": MetricDef("tokens", None, "tokens in the first-token prompt"),
    "saved_vs_fresh_s": MetricDef("s", "higher", "seconds saved against fresh-download"),
    "speedup_vs_fresh": MetricDef("x", "higher", "fresh-download total_s over this setup's"),
}


@dataclass(frozen=True)
class Start:
    download: bool  # a fresh download (cache folder removed first); else from the local cache
    xet_high_performance: bool = False
    page_cache: str = ""  # for cached starts: "evicted" or "warm"


SETUPS = {
    "fresh-download": Start(download=True),
    "fresh-download-xet-hp": Start(download=True, xet_high_performance=True),
    "cache-evicted": Start(download=False, page_cache="evicted"),
    "cache-warm": Start(download=False, page_cache="warm"),
}


SETUP_NOTES = {
    "fresh-download": "empty HF cache: download Qwen2.5-7B-Instruct from the Hub, load to the GPU, first token",
    "fresh-download-xet-hp": "the same download with HF_XET_HIGH_PERFORMANCE=1",
    "cache-evicted": "files on local disk, page cache dropped: a cold read from disk, load, first token",
    "cache-warm": "files on local disk and in the page cache: load and first token only",
}


def weights_for(setup: str, config: Config) -> list[str]:
    """Cached starts load the study's weights from disk; fresh downloads fetch their own; random needs none."""
    return [] if SETUPS[setup].download or config.checkpoint == "random" else [config.model_id]


def _root(config: Config) -> Path:
    if config.cache_dir:
        return Path(config.cache_dir).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpubench" / "cold-start"


def _shape(config: Config) -> checkpoint.Shape:
    return checkpoint.Shape(
        hidden_size=config.hidden_size, num_layers=config.num_layers, num_heads=config.num_heads,
        num_kv_heads=config.num_kv_heads, intermediate_size=config.intermediate_size,
        vocab_size=config.vocab_size, shards=config.shards)


@dataclass
class Source:
    """Where the timed start gets its model: a repo in a Hub cache, or a plain folder."""

    repo_id: str
    folder: Path  # the snapshot (or plain) folder the files are in
    cache_dir: Path | None  # its Hub cache root; None: a plain folder (no snapshot_download)
    local_files_only: bool


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    start = SETUPS[setup]
    patterns = [p.strip() for p in config.allow_patterns.split(",") if p.strip()]
    preloaded = [name for name in (*TIMED_IMPORTS, "safetensors", "accelerate", "tokenizers", "numpy")
                 if name in sys.modules]
    ctx.info["preloaded_modules"] = preloaded
    if set(preloaded) & set(TIMED_IMPORTS):
        raise RuntimeError(f"{', '.join(preloaded)} imported before the import timer: import_s would be wrong")

    if start.download:
        source = _prepare_download(start, config, ctx)
    else:
        source, files = _prepare_cached(start, config, patterns, ctx)
        resident = _resident([_blob(f) for f in files])  # the share of the checkpoint in RAM as the clock starts

    values = _timed_start(source, config, patterns, ctx)
    if not start.download and resident is not None:
        values["resident_at_start_pct"] = resident

    if start.download:
        snapshot = Path(ctx.info["snapshot"])
        files = _snapshot_files(snapshot, patterns)
        downloaded = sum(f.stat().st_size for f in files)
        values["download_gb"] = downloaded / 1e9
        values["download_mbps"] = downloaded / values["download_s"] / 1e6
        values["download_pct"] = 100 * values["download_s"] / values["total_s"]
    shards = [f for f in files if f.name.endswith(".safetensors")]
    weights = sum(f.stat().st_size for f in shards)
    values["checkpoint_gb"] = weights / 1e9
    values["load_read_gbps"] = weights / values["load_to_gpu_s"] / 1e9
    if not start.download and config.raw_read:
        values.update(_raw_reads(shards, ctx))
        values["load_vs_raw_read"] = values["load_read_gbps"] / values["raw_read_gbps"]
    return values


def _prepare_download(start: Start, config: Config, ctx: SetupContext) -> Source:
    """A fresh download: the hub must answer; the model's folder in our Hub cache is removed first."""
    if start.xet_high_performance:
        os.environ["HF_XET_HIGH_PERFORMANCE"] = "1"  # read when huggingface_hub is imported, inside the timer
    else:
        os.environ.pop("HF_XET_HIGH_PERFORMANCE", None)
    ctx.info["HF_XET_HIGH_PERFORMANCE"] = os.environ.get("HF_XET_HIGH_PERFORMANCE", "")
    ctx.info["hub"] = hub.endpoint()
    ctx.progress("hub_check")
    reason = hub.unreachable_reason(config.model_id, config.hub_timeout_s)
    if reason:
        raise SetupSkipped(f"{reason}: download phase skipped")
    cache_dir = _root(config) / "hub"
    repo_dir = cache_dir / f"models--{config.model_id.replace('/', '--')}"
    shutil.rmtree(repo_dir, ignore_errors=True)
    ctx.info.update(cache_dir=str(cache_dir), removed=str(repo_dir), filesystem=pagecache.filesystem(cache_dir),
                    download_backend=_download_backend())
    return Source(repo_id=config.model_id, folder=repo_dir, cache_dir=cache_dir, local_files_only=False)


def _download_backend() -> str:
    import importlib.util  # find_spec only looks; it imports nothing

    return "hf-xet" if importlib.util.find_spec("hf_xet") else "http"


def _prepare_cached(start: Start, config: Config, patterns: list[str], ctx: SetupContext) -> tuple[Source, list[Path]]:
    """The checkpoint on local disk (the study's, or a random one written now), then the page cache set."""
    found = ctx.weight_paths.get(config.model_id)
    if config.checkpoint == "random" or found is None:
        source = _random_checkpoint(config, ctx)
    else:
        source = _study_checkpoint(Path(found), config, ctx)
    files = _snapshot_files(source.folder, patterns)
    if not any(f.name.endswith(".safetensors") for f in files):
        raise FileNotFoundError(f"no .safetensors files in {source.folder}")
    blobs = [_blob(f) for f in files]
    ctx.info["filesystem"] = pagecache.filesystem(blobs[0])
    ctx.progress("page_cache", message=start.page_cache)
    if start.page_cache == "evicted":
        pagecache.evict(blobs)
        ctx.info["eviction"] = "fsync + posix_fadvise(POSIX_FADV_DONTNEED) on every blob"
    else:
        before = _resident(blobs)
        ctx.info["resident_before_warming_pct"] = before
        if before is None or before < 99.0:
            pagecache.sequential_read(blobs)  # a start "right after a previous run" finds the files read
        ctx.info["warmed_by_reading"] = before is None or before < 99.0
    return source, files


def _resident(paths: list[Path]) -> float | None:
    try:
        return 100 * pagecache.resident_fraction(paths)
    except OSError:
        return None


def _random_checkpoint(config: Config, ctx: SetupContext) -> Source:
    cache_dir = _root(config) / "random-hub"
    ctx.progress("write_checkpoint", message=f"random {checkpoint.REPO_ID}-shaped checkpoint")
    written = checkpoint.write(cache_dir, _shape(config),
                               progress=lambda done, total, name: ctx.progress("write_checkpoint", done, total, name))
    ctx.info["checkpoint"] = {
        "source": "random", "repo_id": checkpoint.REPO_ID, "shaped_like": MODEL_ID, "cache_dir": str(cache_dir),
        "reused": written["reused"], "write_s": written["write_s"], "write_gbps": written["write_gbps"],
        "weight_bytes": written["weight_bytes"], "shape": written["shape"],
        "tokenizer": "local byte-level BPE (the prompt's words merged whole) with Qwen2.5's special tokens and"
                     " chat format; the real one is on the Hub only",
    }
    repo_dir = checkpoint.repo_folder(cache_dir)
    folder = repo_dir / "snapshots" / (repo_dir / "refs" / "main").read_text().strip()
    return Source(repo_id=checkpoint.REPO_ID, folder=folder, cache_dir=cache_dir, local_files_only=True)


def _study_checkpoint(folder: Path, config: Config, ctx: SetupContext) -> Source:
    """The real weights: a snapshot in a Hub cache (cache check through snapshot_download) or a plain folder."""
    in_cache = folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--")
    ctx.info["checkpoint"] = {"source": "hub cache" if in_cache else "folder", "path": str(folder)}
    if not in_cache:
        return Source(repo_id=config.model_id, folder=folder, cache_dir=None, local_files_only=True)
    reason = hub.unreachable_reason(config.model_id, config.hub_timeout_s)
    ctx.info["cache_check"] = f"offline ({reason})" if reason else f"online against {hub.endpoint()}"
    return Source(repo_id=config.model_id, folder=folder, cache_dir=folder.parents[2], local_files_only=bool(reason))


def _snapshot_files(folder: Path, patterns: list[str]) -> list[Path]:
    files = [f for f in sorted(folder.rglob("*")) if f.is_file()]
    return [f for f in files if any(fnmatch.fnmatch(f.relative_to(folder).as_posix(), p) for p in patterns)]


def _blob(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _timed_start(source: Source, config: Config, patterns: list[str], ctx: SetupContext) -> dict[str, float]:
    """The study's script: imports, snapshot_download, load, one token; each phase timed, and the total."""
    with timing.Timed(None, None) as start:  # total_s: the first import to the first token
        with timing.Timed(ctx, None, phase="imports") as importing:
            import torch
            from huggingface_hub import snapshot_download
            from transformers import AutoModelForCausalLM, AutoTokenizer

        with timing.Timed(ctx, None, phase="download",
                          message="cache check" if source.local_files_only else "download") as download:
            if source.cache_dir is None:
                path = str(source.folder)
                _snapshot_files(source.folder, patterns)  # a plain folder: the check is listing it
            else:
                path = snapshot_download(source.repo_id, allow_patterns=patterns, cache_dir=source.cache_dir,
                                         local_files_only=source.local_files_only)
        ctx.info["snapshot"] = path

        device = measure_device.resolve(config.device)
        # cold: the load is the device's first use, CUDA context included, as in the study's script
        with timing.Timed(ctx, device, phase="load", cold=True) as load:
            tok = AutoTokenizer.from_pretrained(path)
            model, loading = AutoModelForCausalLM.from_pretrained(
                path, dtype=getattr(torch, config.dtype), device_map=device, output_loading_info=True)

        with timing.Timed(ctx, device, phase="first_token") as first_token:
            inputs = tok.apply_chat_template([{"role": "user", "content": config.prompt}], add_generation_prompt=True,
                                             return_tensors="pt", return_dict=True).to(device)
            model.generate(**inputs, max_new_tokens=config.max_new_tokens, do_sample=False)
    r = {"import_s": importing.seconds, "download_s": download.seconds, "load_to_gpu_s": load.seconds,
         "first_token_s": first_token.seconds, "total_s": start.seconds}

    r["prompt_tokens"] = inputs["input_ids"].shape[-1]
    missing = sorted(loading.get("missing_keys", []))
    ctx.info.update(missing_keys=missing[:20], unexpected_keys=sorted(loading["unexpected_keys"])[:20])
    if missing and source.repo_id == checkpoint.REPO_ID:
        raise RuntimeError(f"the random checkpoint lacks {len(missing)} tensors the model has, e.g. {missing[0]}")
    return r


def _raw_reads(shards: list[Path], ctx: SetupContext) -> dict[str, float]:
    """The study's dd, after the timed start: the shards read raw after eviction, then again right after."""
    ctx.progress("raw_read", message="after eviction")
    shard_blobs = [_blob(f) for f in shards]
    pagecache.evict(shard_blobs)
    ctx.info["raw_read_resident_before_pct"] = _resident(shard_blobs)
    cold_bytes, cold_s = pagecache.sequential_read(shard_blobs)
    ctx.progress("raw_read", message="right after a previous read")
    warm_bytes, warm_s = pagecache.sequential_read(shard_blobs)
    ctx.info["raw_read"] = f"{len(shard_blobs)} shards front to back in {pagecache.READ_BUFFER >> 20} MiB reads"
    return {"raw_read_gbps": cold_bytes / cold_s / 1e9, "raw_read_warm_gbps": warm_bytes / warm_s / 1e9}


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """Against the default fresh download of the same repeat: seconds saved and speed-up of each cached start."""
    by_setup = {r.setup: r for r in results}
    fresh = by_setup.get("fresh-download")
    if fresh is None or "total_s" not in fresh.metrics:
        return {}
    fresh_total = fresh.metrics["total_s"].value
    out = {}
    for name in ("cache-evicted", "cache-warm"):
        if name in by_setup and "total_s" in by_setup[name].metrics:
            total = by_setup[name].metrics["total_s"].value
            out[name] = {"saved_vs_fresh_s": fresh_total - total, "speedup_vs_fresh": fresh_total / total}
    return out
