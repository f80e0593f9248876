"""llama.cpp's own OpenAI-compatible server (`llama-server`) with Ollama's settings: Ollama's runner without Ollama.

Ollama serves a GGUF by starting llama.cpp's server with `--parallel OLLAMA_NUM_PARALLEL` and a context of
OLLAMA_CONTEXT_LENGTH per slot (its scheduler multiplies the two into `--ctx-size`), its batch of 512, every layer
that fits on the GPU, and keeps it loaded for OLLAMA_KEEP_ALIVE. `LlamaCppFlags` is that mapping, written out
(docs/architecture.md, "Engines", gives each flag's reason). The programs come from tools/llamacpp_build.sh, which
builds them from the llama.cpp source PyPI's llama-cpp-python sdist vendors and writes build-info.json beside them.

Ready when /health answers 200 (503 while the model loads). The startup log gives the model, KV cache and compute
buffers' sizes per device; /metrics (--metrics) the prompt, cached-prompt and generated token counters; POST
/slots/N?action=erase (needs --slot-save-path) empties a slot's cached prompt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpubench import prometheus
from gpubench.servers.process import ManagedServer, ServerFailed, http_get

SOURCE_VERSION = "0.3.36"  # PyPI llama-cpp-python, whose sdist's vendor/llama.cpp tools/llamacpp_build.sh builds
PROGRAMS = ("llama-server", "llama-quantize", "llama-bench")
DIR_ENV = "GPUBENCH_LLAMACPP_DIR"
BUILD_INFO = "build-info.json"
INSTALL_HINT = ("llama.cpp is not built here: bash tools/llamacpp_build.sh builds llama-server into .llama-cpp/ (found"
                f" with no setting), or set {DIR_ENV} / --set llamacpp_dir=PATH to a folder with bin/llama-server,"
                " or put llama-server on PATH")

# 0.01.374.744 I load_tensors:   CPU_Mapped model buffer size =    32.71 MiB (time, level, source, device, size)
_BUFFER = re.compile(r"\b\w+:\s+(\S+)\s+(model|KV|compute) buffer size =\s+([\d.]+) MiB")
_LEVEL = re.compile(r"^[\d.]+ ([A-Z]) ")  # the level letter after the time: I(nfo), W(arning), E(rror)
_SLOTS = re.compile(r"initializing, n_slots = (\d+), n_ctx_slot = (\d+)")
_N_CTX = re.compile(r"llama_context: n_ctx\s+= (\d+)")
_ERROR = re.compile(r"^(?:.*\b(?:error|failed)\b.*)$", re.IGNORECASE | re.MULTILINE)

# /metrics counters read around every load run, by the short names serving_common reads (vLLM's too).
COUNTERS = {
    "prompt_tokens_uncached": "llamacpp:prompt_tokens",  # prompt tokens evaluated, the cached ones left out
    "prompt_tokens_cached": "llamacpp:prompt_tokens_cached",  # prompt tokens a slot had cached already
    "generation_tokens": "llamacpp:tokens_predicted",
    "generation_seconds": "llamacpp:tokens_predicted_seconds",  # slot-seconds spent generating them
    "decode_calls": "llamacpp:n_decode",
}


class LlamaCppNotFound(ServerFailed):
    """No llama-server here: the serving workloads make it a skipped setup with this hint."""


@dataclass(frozen=True)
class Install:
    """A llama.cpp build: its programs' folder, and what tools/llamacpp_build.sh wrote about it ({} if nothing)."""

    bin_dir: Path
    build: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def prefix(self) -> Path:
        return self.bin_dir.parent

    def program(self, name: str) -> str:
        path = self.bin_dir / name
        if not os.access(path, os.X_OK):
            raise LlamaCppNotFound(f"{path} is missing or not executable: this llama.cpp build lacks {name}"
                                   f" (bash tools/llamacpp_build.sh builds {', '.join(PROGRAMS)})")
        return str(path)

    @property
    def converter(self) -> Path | None:
        """convert_hf_to_gguf.py of the same llama.cpp tree (its conversion/ package and gguf-py beside it)."""
        path = self.prefix / "convert" / "convert_hf_to_gguf.py"
        return path if path.exists() else None

    def version(self) -> str:
        """'0.5.0 (0c1e570, CUDA sm_90)' from build-info.json, else what `llama-server --version` prints."""
        if self.build.get("version"):
            commit = (self.build.get("commit") or "")[:7]
            cuda = self.build.get("cuda") or {}
            where = f"CUDA sm_{cuda['architectures']}" if cuda else f"CPU, {self.build.get('cpu', '?')}"
            return f"{self.build['version']} ({', '.join(p for p in (commit, where) if p)})"
        return self.reported_version() or "unknown"

    def reported_version(self) -> str | None:
        """llama-server --version's first line without its label: '0 (0c1e570)' (build number, commit)."""
        try:
            out = subprocess.run([self.program("llama-server"), "--version"], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.SubprocessError, ServerFailed):
            return None
        for line in (out.stdout + out.stderr).splitlines():
            if line.startswith("version:"):
                return line.split(":", 1)[1].strip()
        return None


def source_prefix() -> Path:
    """.llama-cpp/ in gpubench's source tree, where tools/llamacpp_build.sh installs by default."""
    return Path(__file__).resolve().parents[2] / ".llama-cpp"


def _install_at(folder: Path) -> Install | None:
    """The build in `folder` (a prefix with bin/, or a bin folder itself), or None when it holds no llama-server."""
    for bin_dir in (folder / "bin", folder):
        if os.access(bin_dir / "llama-server", os.X_OK):
            info = bin_dir.parent / BUILD_INFO
            try:
                build = json.loads(info.read_text()) if info.exists() else {}
            except (OSError, ValueError):
                build = {}
            return Install(bin_dir, build)
    return None


def build_cache() -> Path:
    """Where tools/llamacpp_build.sh keeps each build by its key."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpubench" / "llama.cpp"


def _cached_build() -> Install | None:
    """The newest build in the build cache that runs here (a fresh clone of a machine that built one before)."""
    builds = [found for folder in build_cache().glob("*/") if (found := _install_at(folder)) and found.build]
    for build in sorted(builds, key=lambda b: b.build.get("built_at", ""), reverse=True):
        if build.reported_version():  # a CUDA build on a machine without CUDA's libraries does not start
            return build
    return None


def find(configured: str = "") -> Install:
    """The llama.cpp build to run: the setting, else $GPUBENCH_LLAMACPP_DIR, else the source tree's .llama-cpp/
    (tools/llamacpp_build.sh), else `llama-server` on PATH (the image's /opt/llama.cpp/bin), else the newest build
    in tools/llamacpp_build.sh's cache that runs here."""
    for given in (configured, os.environ.get(DIR_ENV, "")):
        if given:
            found = _install_at(Path(given).expanduser())
            if found is None:
                raise ServerFailed(f"llama.cpp folder {given!r} holds no executable llama-server (in it or in its"
                                   " bin/)")
            return found
    found = _install_at(source_prefix())
    if found is None and (on_path := shutil.which("llama-server")):
        found = _install_at(Path(on_path).resolve().parent)
    if found is None:
        found = _cached_build()
    if found is None:
        raise LlamaCppNotFound(INSTALL_HINT)
    return found


def installed_version() -> str | None:
    """The version of the build `find` would run, for the environment block; None when there is none."""
    try:
        return find().version()
    except ServerFailed:
        return None


@dataclass(frozen=True)
class LlamaCppFlags:
    """llama-server's flags for one GGUF, mapped from Ollama's settings; everything else stays llama.cpp's default."""

    model: str  # a GGUF file
    alias: str  # the model name requests carry (and /v1/models lists)
    parallel: int = 16  # OLLAMA_NUM_PARALLEL: slots decoded together (continuous batching, llama-server's default)
    ctx_per_slot: int = 4096  # OLLAMA_CONTEXT_LENGTH: the context each slot gets
    gpu_layers: str = "all"  # every layer on the GPU (ignored by a CPU build)
    batch: int = 512  # Ollama's num_batch (llama-server's own default is 2048)
    flash_attn: str = "auto"  # on where the GPU and model support it, as Ollama decides it
    threads: int = 0  # 0: llama.cpp's default (the physical cores, as Ollama passes)
    seed: int | None = None

    def args(self) -> list[str]:
        """The flags, with why where llama.cpp's default would do something else."""
        args = ["--model", self.model, "--alias", self.alias,
                # The KV cache split into `parallel` equal slots (not one pool all slots draw on): each slot holds
                # exactly ctx_per_slot tokens, as Ollama's --ctx-size num_ctx x num_parallel gives.
                "--parallel", str(self.parallel), "--ctx-size", str(self.parallel * self.ctx_per_slot),
                "--no-kv-unified",
                "--n-gpu-layers", self.gpu_layers, "--batch-size", str(self.batch), "--flash-attn", self.flash_attn,
                "--fit", "off",  # a model that does not fit fails to load, never silently on fewer layers
                "--cache-ram", "0",  # no host-memory prompt cache beside the slots (Ollama's runner has none)
                "--metrics", "--no-webui", "--offline",
                # the model, KV cache and compute buffer sizes are trace-level lines (4) of this version's log; at 4
                # it also writes ~50 lines per request, which stay in its log file (LlamaCppServer.echoed)
                "--log-verbosity", "4"]
        if self.threads:
            args += ["--threads", str(self.threads)]
        if self.seed is not None:
            args += ["--seed", str(self.seed)]
        return args


@dataclass
class Buffers:
    """MiB per device of each kind of buffer the startup log announced ({'CUDA0': 4460.9, 'CPU_Mapped': 292.3})."""

    model: dict[str, float] = field(default_factory=dict)
    kv: dict[str, float] = field(default_factory=dict)
    compute: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def on_gpu(device: str) -> bool:
        """CUDA0, ROCm0, Vulkan0...; not CPU, CPU_Mapped, CPU_REPACK, nor CUDA_Host (pinned host memory)."""
        return not device.upper().startswith("CPU") and not device.endswith("_Host")

    def gib(self, kind: str, gpu_only: bool = False) -> float:
        return sum(v for d, v in getattr(self, kind).items() if self.on_gpu(d) or not gpu_only) / 1024


def buffers(log: str) -> Buffers:
    found = Buffers()
    for device, kind, mib in _BUFFER.findall(log):
        table = {"model": found.model, "KV": found.kv, "compute": found.compute}[kind]
        table[device] = table.get(device, 0.0) + float(mib)
    return found


class LlamaCppServer(ManagedServer):
    name = "llama.cpp"
    can_empty_cache = True

    def __init__(self, flags: LlamaCppFlags, log_path, install: Install | None = None, ready_timeout_s: float = 900.0,
                 port: int | None = None, echo: bool = True):
        super().__init__(log_path, port=port, echo=echo)
        self.flags = flags
        self.install = install or find()
        self.ready_timeout_s = ready_timeout_s
        self._slot_dir: tempfile.TemporaryDirectory | None = None

    def argv(self) -> list[str]:
        if self._slot_dir is None:  # slot actions (erase among them) are served only with a save path
            self._slot_dir = tempfile.TemporaryDirectory(prefix="gpubench-llamacpp-slots-")
        return [self.install.program("llama-server"), *self.flags.args(), "--slot-save-path", self._slot_dir.name,
                "--host", self.host, "--port", str(self.port)]

    @property
    def ready_url(self) -> str:
        return f"{self.root_url}/health"

    def echoed(self, line: str) -> bool:
        """Until it is ready, every line (how it loaded: run.log shows it); after that its warnings and errors only:
        each request's trace lines (and their untagged continuation lines) stay in its log file."""
        level = _LEVEL.match(line)
        return self.ready_s is None or (level is not None and level.group(1) in "WE")

    def stop(self, grace_s: float = 30.0, term_s: float = 10.0) -> None:
        try:
            super().stop(grace_s, term_s)
        finally:
            if self._slot_dir is not None:
                self._slot_dir.cleanup()
                self._slot_dir = None

    def _cause(self) -> str:
        """': <the last line that says error or failed>' of the log (llama.cpp logs no exception names)."""
        lines = [m.group(0).strip() for m in _ERROR.finditer(self.log_text())]
        return f": {lines[-1][:300]}" if lines else ""

    def startup_facts(self) -> dict[str, float]:
        """What the startup log says: weights_gib, kv_cache_gib, compute_buffer_gib (every device), model_vram_gib
        (the three on the GPU: what Ollama's /api/ps calls size_vram), kv_cache_tokens and slot_context_tokens."""
        log = self.log_text()
        found = buffers(log)
        facts: dict[str, float] = {}
        if found.model:
            facts["weights_gib"] = found.gib("model")
        if found.kv:
            facts["kv_cache_gib"] = found.gib("kv")
        if found.compute:
            facts["compute_buffer_gib"] = found.gib("compute")
        on_gpu = sum(found.gib(kind, gpu_only=True) for kind in ("model", "kv", "compute"))
        if on_gpu:
            facts["model_vram_gib"] = on_gpu
        if m := _N_CTX.search(log):
            facts["kv_cache_tokens"] = float(m.group(1))
        if m := _SLOTS.search(log):
            facts["slot_context_tokens"] = float(m.group(2))
        return facts

    def slots(self) -> int | None:
        """The slot count the server reports it initialised (the log's n_slots)."""
        m = _SLOTS.search(self.log_text())
        return int(m.group(1)) if m else None

    def props(self) -> dict:
        status, body = http_get(f"{self.root_url}/props", timeout=10)
        return json.loads(body) if status == 200 else {}

    def version(self) -> str:
        return self.install.version()

    def counters(self) -> dict[str, float]:
        """COUNTERS by their short names, with the prompt-cache names vLLM's counters have: prefix_cache_queries
        (prompt tokens, cached or not), prefix_cache_hits (the cached ones) and prompt_tokens; and
        busy_slot_decodes, the slots in all llama_decode() calls together (the mean per call, a gauge since the
        start, times the calls), so that two readings' difference over decode_calls' is a run's mean batch."""
        status, body = http_get(f"{self.root_url}/metrics", timeout=10)
        if status != 200:
            raise ServerFailed(f"llama.cpp /metrics answered {status}")
        samples = prometheus.parse(body.decode(errors="replace"))
        found = {short: prometheus.counter(samples, name) for short, name in COUNTERS.items()}
        counters = {short: value for short, value in found.items() if value is not None}
        if "prompt_tokens_uncached" in counters and "prompt_tokens_cached" in counters:
            total = counters["prompt_tokens_uncached"] + counters["prompt_tokens_cached"]
            counters.update(prompt_tokens=total, prefix_cache_queries=total,
                            prefix_cache_hits=counters["prompt_tokens_cached"])
        per_decode = samples.get("llamacpp:n_busy_slots_per_decode")
        if per_decode is not None and "decode_calls" in counters:
            counters["busy_slot_decodes"] = per_decode * counters["decode_calls"]
        return counters

    def empty_prompt_cache(self) -> str:
        self.erase_slots()
        return "llama.cpp's slots erased (each slot's cached prompt emptied) before the level's warm-up"

    def erase_slots(self, tries: int = 20) -> None:
        """Empty every slot's cached prompt, so what a load finds cached is what it sent itself. A slot still
        finishing a request refuses: tried again."""
        for slot in range(self.slots() or self.flags.parallel):
            for _ in range(tries):
                status, body = http_get(f"{self.root_url}/slots/{slot}?action=erase", timeout=60, method="POST")
                if status == 200:
                    break
                time.sleep(0.5)
            else:
                raise ServerFailed(f"llama.cpp would not erase slot {slot}: {status}"
                                   f" {body[:200].decode(errors='replace')}")
