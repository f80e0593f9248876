"""The catalog: every benchmark's metadata, registered in this one place.

This module is data only. The launcher, `gpubench list` and the image tests read it; nothing here
imports the code that runs a workload (`module` names it, and the runner imports it on demand).
Adding a workload = one entry here + `workloads/<module>.py` + `images/<name>/` + its tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from gpubench import __version__
from gpubench.registry import Registry

IMAGE_REGISTRY_DEFAULT = "ghcr.io/gpubench"

# The studies' software, shared by most entries (torch 2.8.0+cu128, transformers 4.57.1, Python 3.12).
TORCH = {"torch": "2.8.0"}
TRANSFORMERS = {"transformers": "4.57.1"}
VLLM = {"vllm": "0.11.0"}
VLLM_MIN_COMPUTE_CAPABILITY = (7, 0)  # vLLM 0.11's CUDA build: Volta and later


@dataclass(frozen=True)
class CostBasis:
    """How a metric turns an hourly price into a cost per unit of output.

    kind="rate": `metric` is units per second (tokens_per_s); kind="seconds": `metric` is seconds
    spent per unit (a cold start's total_s). `per` units make one priced unit ("1M tokens").
    """

    metric: str
    unit: str
    per: float
    kind: Literal["rate", "seconds"] = "rate"

    def per_unit(self, value: float, per_hour: float) -> float | None:
        """Anything spent at a steady rate per hour (dollars, joules) per priced unit, from the metric's value."""
        if value <= 0:
            return None
        seconds = self.per / value if self.kind == "rate" else value * self.per
        return per_hour * seconds / 3600.0

    def usd_per_unit(self, value: float, usd_per_hour: float) -> float | None:
        return self.per_unit(value, usd_per_hour)


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    title: str
    study: str  # the post's title in shared/seeds/runcrate-posts.txt
    setups: tuple[str, ...]
    gpus: str  # what the study ran on, for humans
    gpu_count: int
    min_gpu_memory_gb: float
    expected_minutes: float  # full-size run on a study GPU, excluding the image pull
    dependencies: dict[str, str]  # exact versions the image pins (checked against images/<name>/)
    # servers built from source, not Python packages: the environment block records the build it finds of each
    # (gpubench/servers/engines.py VERSIONS), e.g. llama.cpp from tools/llamacpp_build.sh
    engines: tuple[str, ...] = ()
    module: str | None = None  # gpubench.workloads.<x>; None while its code is not written
    cost: CostBasis | None = None
    energy: CostBasis | None = None  # the unit joules are given per, where it differs from cost's (per image)
    via: Literal["job", "instance"] = "job"
    weights: tuple[str, ...] = ()  # Hub repos the study loads; an image build arg can bake them in
    notes: str = ""
    extra: str = ""  # the pip extra (pyproject.toml) `gpubench run` needs for it: gpubench/extras.py
    extra_modules: tuple[str, ...] | None = None  # what of the extra it imports, where not all (its image has no more)
    # What a GPU must have for the full-size study, beyond min_gpu_memory_gb per GPU (gpubench/gpu_fit.py, checked
    # against data/gpu_peaks.csv before a GPU is rented): tensor-core dtypes ("fp8"), CUDA compute capability, and
    # the GPUs of one host a setup needs where that is not gpu_count (a 2-GPU setup of a 4-GPU study).
    gpu_features: tuple[str, ...] = ()
    min_compute_capability: tuple[int, int] = (0, 0)
    setup_gpu_count: dict[str, int] = field(default_factory=dict)
    # CPUs per GPU the study's machine gave it (the smallest where the post names several; else 8: the process
    # driving the GPU plus a loader's or tokenizer's workers). A Slurm job asks for this times its GPUs.
    cpus_per_gpu: int = 8

    def gpus_needed(self, setups: list[str] | tuple[str, ...] | None) -> int:
        """GPUs of one host the chosen setups need (all setups when None)."""
        return max(self.setup_gpu_count.get(s, self.gpu_count) for s in (setups or self.setups))

    @property
    def energy_basis(self) -> CostBasis | None:
        return self.energy or self.cost
    smoke_minutes: float = 2.0  # a --smoke run (the same code path on CPU-sized shapes), excluding the image pull

    @property
    def implemented(self) -> bool:
        return self.module is not None

    @property
    def image(self) -> str:
        registry = os.environ.get("GPUBENCH_IMAGE_REGISTRY", IMAGE_REGISTRY_DEFAULT).rstrip("/")
        return f"{registry}/{self.name}:{__version__}"

    @property
    def max_runtime_minutes(self) -> int:
        """The launcher's default safety net: twice the expected time plus image pull and setup."""
        return self.safety_net_minutes(smoke=False)

    def expected(self, smoke: bool) -> float:
        """The expected minutes of what a run will run: the full study, or its smoke run."""
        return self.smoke_minutes if smoke else self.expected_minutes

    def safety_net_minutes(self, smoke: bool) -> int:
        return int(self.expected(smoke) * 2 + 15)


WORKLOADS: Registry[WorkloadSpec] = Registry("workload")

WORKLOADS.add("train-compile", WorkloadSpec(
    name="train-compile",
    extra="train",
    title="torch.compile vs eager training step, 468M Llama",
    study="torch.compile vs eager for training a 468M Llama-style model on four GPUs",
    setups=("eager-sdpa", "compile-sdpa", "eager-eager", "compile-eager"),
    gpus="1 GPU; 56 GB for eager attention without compile (RTX 5090, L40S, RTX A6000, H100 PCIe)",
    gpu_count=1, min_gpu_memory_gb=24, expected_minutes=8,
    dependencies={**TORCH, **TRANSFORMERS},
    module="gpubench.workloads.train_compile",
    cost=CostBasis(metric="tokens_per_s", unit="1M tokens", per=1e6),
    energy=CostBasis(metric="tokens_per_s", unit="1M training tokens", per=1e6),
))
WORKLOADS.add("embed", WorkloadSpec(
    name="embed",
    extra="embed",
    title="Text embedding throughput: BGE small/base/large at 128 and 512 tokens",
    study="Text embedding throughput per dollar: BGE small, base and large on RTX 5090, L40S, RTX A6000 and H100",
    setups=tuple(f"bge-{size}-{seq}" for size in ("small", "base", "large") for seq in (128, 512)),
    gpus="1 GPU, 4 GB", gpu_count=1, min_gpu_memory_gb=4, expected_minutes=12,
    cpus_per_gpu=12,  # 12 to 28 vCPUs in the study; the small models' speed is the CPU's
    dependencies={**TORCH, **TRANSFORMERS, "sentence-transformers": "5.7.0"},
    cost=CostBasis(metric="passages_per_s", unit="1M passages", per=1e6),
    weights=("BAAI/bge-small-en-v1.5", "BAAI/bge-base-en-v1.5", "BAAI/bge-large-en-v1.5"),
    module="gpubench.workloads.embed",
))
WORKLOADS.add("cold-start", WorkloadSpec(
    name="cold-start",
    extra="cold-start",
    title="Model cold start: fresh Hub download vs local cache, time to first token (Qwen2.5-7B)",
    study="Fresh Hugging Face download vs local cache: time to first token for a 7B model on a Runcrate L40S",
    setups=("fresh-download", "fresh-download-xet-hp", "cache-evicted", "cache-warm"),
    gpus="1 GPU, 24 GB", gpu_count=1, min_gpu_memory_gb=24, expected_minutes=6,
    cpus_per_gpu=12,  # the study's L40S had 12 vCPUs
    dependencies={**TORCH, **TRANSFORMERS, "huggingface-hub": "0.36.2", "hf-xet": "1.7.1", "accelerate": "1.15.0"},
    cost=CostBasis(metric="total_s", unit="start", per=1, kind="seconds"),
    weights=("Qwen/Qwen2.5-7B-Instruct",),
    module="gpubench.workloads.cold_start",
))
WORKLOADS.add("whisper", WorkloadSpec(
    name="whisper",
    extra="whisper",
    title="Whisper large-v3 audio hours per dollar: faster-whisper batched/sequential vs transformers",
    study="Whisper large-v3 hours of audio per dollar on four GPUs: RTX 5090, L40S, RTX A6000 and H100",
    setups=("fw-turbo-fp16-b16", "fw-large-v3-fp16-b16", "fw-large-v3-int8-b16", "hf-large-v3-fp16-b16",
            "fw-large-v3-fp16-seq"),
    gpus="1 GPU, 32 GB", gpu_count=1, min_gpu_memory_gb=32, expected_minutes=30,
    cpus_per_gpu=6,  # 6 to 20 vCPUs in the study; the batched pipeline decodes and filters audio on the CPU
    dependencies={**TORCH, **TRANSFORMERS, "accelerate": "1.15.0", "faster-whisper": "1.2.1", "ctranslate2": "4.8.4",
                  "jiwer": "4.0.0"},
    cost=CostBasis(metric="realtime_factor", unit="1k audio hours", per=3.6e6),
    energy=CostBasis(metric="realtime_factor", unit="audio hour", per=3600),
    weights=("Systran/faster-whisper-large-v3", "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
             "openai/whisper-large-v3", "datasets/distil-whisper/tedlium-long-form"),
    module="gpubench.workloads.whisper",
))
WORKLOADS.add("finetune", WorkloadSpec(
    name="finetune",
    extra="finetune",
    title="Full fine-tune vs LoRA vs QLoRA, Qwen2.5-1.5B",
    study="Full fine-tune vs LoRA vs QLoRA on one L40S: Qwen2.5-1.5B, memory, speed and held-out loss, measured",
    setups=("full-mb4", "lora-mb4", "qlora-mb4", "full-mb8", "lora-mb8", "qlora-mb8", "lora-tuned"),
    gpus="1 GPU, 48 GB (full fine-tune OOMs at micro-batch 8 there)", gpu_count=1, min_gpu_memory_gb=40,
    expected_minutes=25,
    dependencies={**TORCH, **TRANSFORMERS, "peft": "0.17.1", "bitsandbytes": "0.50.2", "accelerate": "1.15.0"},
    cost=CostBasis(metric="train_s", unit="training run", per=1, kind="seconds"),  # the post's "GPU cost of training"
    energy=CostBasis(metric="tokens_per_s", unit="1M training tokens", per=1e6),
    weights=("Qwen/Qwen2.5-1.5B-Instruct", "datasets/yahma/alpaca-cleaned"),
    module="gpubench.workloads.finetune",
))
WORKLOADS.add("ollama-vs-vllm", WorkloadSpec(
    name="ollama-vs-vllm",
    extra="serve",
    title="Ollama Q4_K_M / Q8_0 vs vLLM bf16 on a 24 GB card, speed and GSM8K",
    study="Ollama Q4 vs vLLM bf16 on a 24 GB A10: 3x the single-user speed, 1.2 points of GSM8K",
    setups=tuple(f"{server}-{part}" for server in ("ollama-q4km", "ollama-q8", "llamacpp-q4km", "llamacpp-q8",
                                                   "vllm-bf16") for part in ("u1", "u4", "u16", "gsm8k")),
    gpus="1 GPU, 24 GB (A10 in the study)", gpu_count=1, min_gpu_memory_gb=24, expected_minutes=35,
    dependencies={**VLLM, "ollama": "0.40.12", "openai": "2.6.1"}, engines=("llama.cpp",),
    cost=CostBasis(metric="output_tokens_per_s", unit="1M output tokens", per=1e6),
    weights=("Qwen/Qwen2.5-7B-Instruct",),
    module="gpubench.workloads.ollama_vs_vllm",
))
WORKLOADS.add("sdxl", WorkloadSpec(
    name="sdxl",
    extra="sdxl",
    title="SDXL images per dollar, eager vs torch.compile, batch 1 and 4",
    study="SDXL images per dollar on four GPUs: RTX A6000, L40S, RTX 5090 and H100, eager vs torch.compile",
    setups=("eager-b1", "eager-b4", "compile-b1", "compile-b4"),
    gpus="1 GPU, 16 GB", gpu_count=1, min_gpu_memory_gb=16, expected_minutes=20,
    dependencies={**TORCH, "diffusers": "0.42.1", "accelerate": "1.15.0"},
    cost=CostBasis(metric="images_per_s", unit="1k images", per=1e3),
    energy=CostBasis(metric="images_per_s", unit="image", per=1),
    weights=("stabilityai/stable-diffusion-xl-base-1.0", "madebyollin/sdxl-vae-fp16-fix"),
    module="gpubench.workloads.sdxl",
))
WORKLOADS.add("vllm-fp8", WorkloadSpec(
    name="vllm-fp8",
    extra="serve",
    title="vLLM online FP8 vs bf16: throughput, latency and GSM8K",
    study="vLLM FP8 vs bf16 on an H100: 1.4x the throughput, and what it did to GSM8K accuracy",
    setups=tuple(f"{mode}-{part}" for mode in ("bf16", "fp8") for part in ("c1", "c8", "c32", "c64", "gsm8k")),
    gpus="1 GPU with FP8 tensor cores (Ada or Hopper), 48 GB", gpu_count=1, min_gpu_memory_gb=48,
    gpu_features=("fp8",), min_compute_capability=VLLM_MIN_COMPUTE_CAPABILITY,
    expected_minutes=15,
    dependencies={**VLLM},
    cost=CostBasis(metric="output_tokens_per_s", unit="1M output tokens", per=1e6),
    weights=("Qwen/Qwen2.5-7B-Instruct",),
    module="gpubench.workloads.vllm_fp8",
))
WORKLOADS.add("vllm-prefix-cache", WorkloadSpec(
    name="vllm-prefix-cache",
    extra="serve",
    extra_modules=("aiohttp",),  # no GSM8K pass: its image has no GSM8K data set
    title="vLLM prefix caching on vs off with a shared 1k/4k-token system prompt",
    study="vLLM prefix caching on vs off: 7.5x the throughput with a 4,000-token system prompt on one L40S",
    setups=tuple(f"{mode}-{prefix}-{users}" for mode in ("on", "off") for prefix in ("p1000", "p4000")
                 for users in ("c1", "c16", "c64")),
    gpus="1 GPU, 48 GB", gpu_count=1, min_gpu_memory_gb=40, expected_minutes=15,
    dependencies={**VLLM},
    min_compute_capability=VLLM_MIN_COMPUTE_CAPABILITY,
    cost=CostBasis(metric="requests_per_s", unit="1k requests", per=1e3),
    weights=("Qwen/Qwen2.5-7B-Instruct",),
    module="gpubench.workloads.vllm_prefix_cache",
))
WORKLOADS.add("ddp-scaling", WorkloadSpec(
    name="ddp-scaling",
    extra="train",
    extra_modules=("torch",),
    title="DDP scaling on one multi-GPU host: plain, bf16 gradient compression, accumulation",
    study="4 GPUs, 2x speed: why PyTorch DDP stalled on a PCIe-only 4x RTX A6000, and two flags that took it to 3.6x",
    setups=("allreduce-2gpu", "allreduce-4gpu",
            "124m-1gpu", "124m-1gpu-accum4", "124m-2gpu", "124m-4gpu", "124m-4gpu-bf16", "124m-4gpu-accum4",
            "124m-4gpu-both",
            "355m-1gpu", "355m-1gpu-accum4", "355m-2gpu", "355m-4gpu", "355m-4gpu-bf16", "355m-4gpu-accum4",
            "355m-4gpu-both"),
    gpus="4 GPUs of one host (PCIe-only in the study)", gpu_count=4, min_gpu_memory_gb=24, expected_minutes=15,
    setup_gpu_count={"allreduce-2gpu": 2, "124m-1gpu": 1, "124m-1gpu-accum4": 1, "124m-2gpu": 2, "355m-1gpu": 1,
                     "355m-1gpu-accum4": 1, "355m-2gpu": 2},
    dependencies={**TORCH},
    cost=CostBasis(metric="tokens_per_s", unit="1B tokens", per=1e9),
    energy=CostBasis(metric="tokens_per_s", unit="1M training tokens", per=1e6),
    module="gpubench.workloads.ddp_scaling",
))
WORKLOADS.add("first-matmul", WorkloadSpec(
    name="first-matmul",
    extra="train",
    extra_modules=("torch",),
    title="Launch to first CUDA matmul: API running, first SSH, first 4096x4096 matmul",
    study="How long until a rented GPU runs CUDA? Launch to first matmul on six GPU types, timed",
    setups=("matmul",),
    gpus="any 1 GPU", gpu_count=1, min_gpu_memory_gb=1, expected_minutes=1,
    dependencies={**TORCH},
    module="gpubench.workloads.first_matmul",
    via="instance",
    notes="the in-container step only; the launcher times create -> running -> SSH around it",
))
WORKLOADS.add("vllm-serving", WorkloadSpec(
    name="vllm-serving",
    extra="serve",
    extra_modules=("aiohttp",),  # no GSM8K pass: its image has no GSM8K data set
    title="vLLM serving cost: Qwen2.5-7B tokens/s and $ per 1M tokens at concurrency 1-64",
    study="vLLM on three GPUs: Qwen2.5-7B tokens per second and cost per 1M tokens on RTX A6000, L40S and H100",
    setups=("c1", "c8", "c32", "c64", "rate-search"),  # rate-search: not the post's (issue 33)
    gpus="1 GPU, 48 GB", gpu_count=1, min_gpu_memory_gb=40, expected_minutes=22,
    dependencies={**VLLM},
    min_compute_capability=VLLM_MIN_COMPUTE_CAPABILITY,
    cost=CostBasis(metric="output_tokens_per_s", unit="1M output tokens", per=1e6),
    weights=("Qwen/Qwen2.5-7B-Instruct",),
    module="gpubench.workloads.vllm_serving",
))
