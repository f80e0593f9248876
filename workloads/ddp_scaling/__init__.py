"""PyTorch DDP scaling on one multi-GPU host: 1, 2 and 4 GPUs, bf16 gradient compression, accumulation.

Study: a GPT-2 style decoder in plain PyTorch (124M: 12 layers x 768 x 12 heads; 355M: 24 x 1024 x 16;
vocabulary 50,257), random tokens, sequence 1,024, micro-batch 8 per GPU (weak scaling), bf16 autocast,
fused AdamW, DDP(gradient_as_bucket_view=True) at every GPU count (the study ran torchrun with 1, 2 and
4 processes). The fixes: `default_hooks.bf16_compress_hook` (gradients all-reduced as bf16) and 4
micro-batches per all-reduce (`no_sync()` on the first 3). Tokens/s = GPUs x micro-batch x sequence x
accumulation / the median optimizer step over 40 steps after 10 warm-up steps.
The all-reduce test is nccl-tests' bus bandwidth (algbw x 2(n-1)/n), float32 from 8 MB to 1 GB.

One setup is one process per GPU (`processes`), with torchrun's environment. Speed-up and scaling
efficiency against the 1-GPU result of the same recipe come from `derive`, in the parent process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from typing import NamedTuple

from gpubench.config_fields import param
from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.ports import free_port
from gpubench.schema import COST_ROLE
from gpubench.stats import percentile
from gpubench.workload import ConfigError, MetricDef, SetupContext, SetupSkipped


@dataclass
class Config:
    vocab_size: int = param(50257, "GPT-2 vocabulary size", min=2)
    seq_len: int = param(1024, "tokens per sequence", min=1)
    micro_batch: int = param(8, "sequences per GPU per step", min=1)
    layers_124m: int = param(12, "layers of the 124M model", min=1)
    width_124m: int = param(768, "width of the 124M model (heads_124m must divide it)", min=1)
    heads_124m: int = param(12, "attention heads of the 124M model", min=1)
    layers_355m: int = param(24, "layers of the 355M model", min=1)
    width_355m: int = param(1024, "width of the 355M model (heads_355m must divide it)", min=1)
    heads_355m: int = param(16, "attention heads of the 355M model", min=1)
    lr: float = param(6e-4, "AdamW learning rate", min=0)
    warmup_steps: int = param(10, "untimed steps first", min=0)
    timed_steps: int = param(40, "timed training steps", min=1)
    allreduce_min_mb: float = param(8, "smallest all-reduce message, MB", min=0.001)
    allreduce_max_mb: float = param(1024, "largest all-reduce message, MB", min=0.001)
    allreduce_warmup: int = param(5, "untimed all-reduces per size", min=0)
    allreduce_iters: int = param(20, "timed all-reduces per size", min=1)
    device: str = param("auto", "auto: cuda + nccl when there are GPUs, else cpu + gloo; or cuda, cpu"
                                " (a process per GPU picks its own)",
                        choices=("auto", "cuda", "cpu"))
    seed: int = param(0, "random seed of weights and tokens", min=0)

    def __post_init__(self):
        for size in ("124m", "355m"):
            width, heads = getattr(self, f"width_{size}"), getattr(self, f"heads_{size}")
            if width % heads:
                raise ConfigError(f"width_{size} {width} does not divide by heads_{size} {heads}")
        if self.allreduce_min_mb > self.allreduce_max_mb:
            raise ConfigError(f"allreduce_min_mb {self.allreduce_min_mb:g} is above allreduce_max_mb"
                              f" {self.allreduce_max_mb:g}")


SMOKE = {
    "vocab_size": 512, "seq_len": 32, "micro_batch": 2,
    "layers_124m": 1, "width_124m": 32, "heads_124m": 2, "layers_355m": 2, "width_355m": 64, "heads_355m": 4,
    "warmup_steps": 1, "timed_steps": 3,
    "allreduce_min_mb": 0.25, "allreduce_max_mb": 1, "allreduce_warmup": 1, "allreduce_iters": 2,
}

HEADLINE = ["tokens_per_s", "speedup", "scaling_efficiency_pct", "step_ms", "busbw_median_gbps", "busbw_peak_gbps",
            "algbw_median_gbps"]

METRICS = {
    "tokens_per_s": MetricDef("tokens/s", "higher", "training tokens per second over all GPUs: the study's headline"),
    "achieved_tflops": MetricDef(
        "TFLOP/s", "higher", "per GPU: tokens_per_s / GPUs x one micro-batch's counted FLOPs per token"),
    "step_ms": MetricDef("ms", "lower", "median optimizer step"),
    "step_ms_p90": MetricDef("ms", "lower", "90th-percentile optimizer step"),
    "gradient_mb_per_step": MetricDef("MB", "lower", "what each rank all-reduces per optimizer step"),
    "params_m": MetricDef("M params", None, "model parameters, millions"),
    "busbw_peak_gbps": MetricDef("GB/s", "higher", "all-reduce bus bandwidth, best message size (nccl-tests' busbw)"),
    "busbw_median_gbps": MetricDef("GB/s", "higher", "all-reduce bus bandwidth, median over message sizes"),
    "algbw_median_gbps": MetricDef(
        "GB/s", "higher", "all-reduce algorithm bandwidth (bytes / time), median over message sizes"),
    # derived, across setups of one repeat (see derive)
    "speedup": MetricDef("x", "higher", "tokens_per_s over the same model's 1-GPU setup"),
    "scaling_efficiency_pct": MetricDef("%", "higher", "speedup / GPUs, in percent"),
    "usd_per_1B_tokens_gpu_share": MetricDef(
        "USD/1B tokens", "lower", "cost per 1B tokens at --price per GPU times the GPUs used", role=COST_ROLE),
    "allreduce_ms_est": MetricDef(
        "ms", "lower", "gradient_mb_per_step over the measured bus bandwidth: the all-reduce's share of a step"),
}


class Recipe(NamedTuple):
    gpus: int
    size: str | None = None  # "124m" / "355m"; None: the all-reduce bandwidth test
    bf16_hook: bool = False
    accum: int = 1  # micro-batches per all-reduce

    @property
    def baseline(self) -> str:
        """The 1-GPU setup with the same recipe: speed-ups of accumulation variants are against it."""
        return f"{self.size}-1gpu" + (f"-accum{self.accum}" if self.accum > 1 else "")


SETUPS: dict[str, Recipe] = {
    # first, as the study advises before a long job: what the interconnect carries
    "allreduce-2gpu": Recipe(2),
    "allreduce-4gpu": Recipe(4),
}
for _size in ("124m", "355m"):
    SETUPS.update({
        f"{_size}-1gpu": Recipe(1, _size),
        f"{_size}-1gpu-accum4": Recipe(1, _size, accum=4),
        f"{_size}-2gpu": Recipe(2, _size),
        f"{_size}-4gpu": Recipe(4, _size),
        f"{_size}-4gpu-bf16": Recipe(4, _size, bf16_hook=True),
        f"{_size}-4gpu-accum4": Recipe(4, _size, accum=4),
        f"{_size}-4gpu-both": Recipe(4, _size, bf16_hook=True, accum=4),
    })
del _size

SETUP_NOTES = {
    name: (f"all-reduce bandwidth test over {recipe.gpus} GPUs" if recipe.size is None else
           f"GPT-2 {recipe.size} DDP on {recipe.gpus} GPU{'s' if recipe.gpus > 1 else ''}"
           + (", bf16 gradient compression hook" if recipe.bf16_hook else "")
           + (f", {recipe.accum} micro-batches per all-reduce (no_sync)" if recipe.accum > 1 else ""))
    for name, recipe in SETUPS.items()
}


COST_NOTE = ("usd_per_1B_tokens is at the price given for the whole machine; the study's 1-GPU row used one "
             "GPU's share of it: usd_per_1B_tokens_gpu_share = that x GPUs used / GPUs on the host")


def processes(setup: str, config: Config) -> int:
    return SETUPS[setup].gpus


class Group(NamedTuple):
    rank: int
    local_rank: int
    world_size: int
    device: object  # torch.device
    host_gpus: int


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    import torch.distributed as dist

    recipe = SETUPS[setup]
    group = join_group(recipe, config)
    try:
        ctx.info.update(host_facts(group))  # every rank computes; the worker reports rank 0's result and progress
        if recipe.size is None:
            return allreduce_test(config, group, ctx.info, ctx.progress)
        ctx.dtype = "bfloat16"  # accumulate's autocast
        return train(recipe, config, group, ctx)
    finally:
        dist.destroy_process_group()


def join_group(recipe: Recipe, config: Config) -> Group:
    """Join the setup's process group: torchrun's variables when the worker set them, else a group of one."""
    import torch
    import torch.distributed as dist

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", str(rank)))
    if world_size != recipe.gpus:
        raise RuntimeError(f"this setup runs {recipe.gpus} processes, but WORLD_SIZE is {world_size}")
    on_cuda = measure_device.on_gpu(measure_device.resolve(config.device))
    host_gpus = torch.cuda.device_count() if on_cuda else 0
    if on_cuda:
        if host_gpus < recipe.gpus:
            plural = "s" if recipe.gpus > 1 else ""
            raise SetupSkipped(f"needs {recipe.gpus} GPU{plural}, this host has {host_gpus}")
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
        torch.set_num_threads(1)  # a CPU rank stands in for a GPU: ranks must not fight over cores
    bound = {"device_id": device} if on_cuda else {}  # NCCL: one communicator per process, on its own GPU
    if world_size > 1:  # the worker's rendezvous (MASTER_ADDR, MASTER_PORT)
        dist.init_process_group(backend, rank=rank, world_size=world_size, **bound)
    else:  # a 1-GPU setup is one process: DDP over a group of one, as `torchrun --nproc_per_node 1` gave the study
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1, **bound)
    return Group(rank, local_rank, world_size, device, host_gpus)


def train(recipe: Recipe, config: Config, group: Group, ctx: SetupContext) -> dict[str, float]:
    import torch
    import torch.distributed as dist

    from gpubench.workloads.ddp_scaling.model import GPT

    device = group.device
    layers, width, heads = (getattr(config, f"{field}_{recipe.size}") for field in ("layers", "width", "heads"))
    info, report = ctx.info, ctx.progress
    report("build_model")
    torch.manual_seed(config.seed)  # the same init everywhere (DDP also broadcasts rank 0's weights)
    model = GPT(config.vocab_size, config.seq_len, layers, width, heads).to(device)
    params = sum(p.numel() for p in model.parameters())
    ddp = wrap(model, group, recipe.bf16_hook)
    opt = torch.optim.AdamW(ddp.parameters(), lr=config.lr, fused=True)
    tokens = torch.Generator(device=device)
    tokens.manual_seed(config.seed + 1 + group.rank)  # each rank its own random micro-batches

    def next_batch():
        return torch.randint(0, config.vocab_size, (config.micro_batch, config.seq_len + 1), device=device,
                             generator=tokens)

    def step() -> None:
        accumulate(ddp, recipe.accum, next_batch)
        opt.step()
        opt.zero_grad(set_to_none=True)

    report("count_flops")
    flops_per_token = count_step_flops(ddp, next_batch) / (config.micro_batch * config.seq_len)
    for i in range(config.warmup_steps):
        step()
        report("warmup", done=i + 1, total=config.warmup_steps)
    measure_device.synchronize(str(device))
    ctx.memory.reset(str(device))
    step_ms = []
    with timing.Timed(ctx, str(device), total=config.timed_steps) as timed:
        for i in range(config.timed_steps):
            step()
            step_ms.append(timed.lap() * 1000)  # each step waited for: the study's per-step times
            report("timed", done=i + 1, total=config.timed_steps)

    median_ms = statistics.median(step_ms)
    tokens_per_step = group.world_size * config.micro_batch * config.seq_len * recipe.accum
    tokens_per_s = tokens_per_step / (median_ms / 1000)
    metrics = {
        "tokens_per_s": tokens_per_s,
        "achieved_tflops": tokens_per_s / group.world_size * flops_per_token / 1e12,
        "step_ms": median_ms,
        "step_ms_p90": percentile(step_ms, 90),
        "params_m": params / 1e6,
    }
    if group.world_size > 1:
        metrics["gradient_mb_per_step"] = params * (2 if recipe.bf16_hook else 4) / 1e6
    metrics.update(ctx.memory.peak(str(device)))  # rank 0's
    info.update({
        "model": {"size": recipe.size, "layers": layers, "width": width, "heads": heads, "params": params,
                  "vocab_size": config.vocab_size, "seq_len": config.seq_len},
        "micro_batch_per_gpu": config.micro_batch,
        "accumulation": recipe.accum,
        "comm_hook": "bf16_compress_hook" if recipe.bf16_hook else None,
        "tokens_per_step": tokens_per_step,
        "flops_per_token": flops_per_token,
        "step_ms_all": [round(ms, 3) for ms in step_ms],
        "replicas_in_sync": _replicas_in_sync(ddp.module, dist, device),
        "cost_note": COST_NOTE,
    })
    return metrics


def wrap(model, group: Group, bf16_hook: bool):
    """The study's DDP: gradient_as_bucket_view, and optionally gradients all-reduced as bf16."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    on_cuda = group.device.type == "cuda"
    ddp = DDP(model, device_ids=[group.local_rank] if on_cuda else None, gradient_as_bucket_view=True)
    if bf16_hook:
        # torch refuses this hook by name unless NCCL is there; gloo (the CPU tests) gets the same function renamed.
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook if on_cuda else _bf16_compress_any_backend)
    return ddp


def accumulate(ddp, accum: int, next_batch) -> None:
    """Forward and backward over `accum` micro-batches; DDP all-reduces only during the last backward."""
    import torch

    from gpubench.workloads.ddp_scaling.model import next_token_loss

    device_type = next(ddp.parameters()).device.type
    for k in range(accum):
        sync_grads = contextlib.nullcontext() if k == accum - 1 else ddp.no_sync()
        with sync_grads:
            batch = next_batch()
            with torch.autocast(device_type, dtype=torch.bfloat16):
                loss = next_token_loss(ddp, batch) / accum
            loss.backward()


def count_step_flops(ddp, next_batch) -> int:
    """One micro-batch's forward and backward FLOPs on this rank (no all-reduce: every rank counts its own)."""
    from gpubench.measure import flops

    with ddp.no_sync():
        counted = flops.count(lambda: accumulate(ddp, 1, next_batch))
    for p in ddp.parameters():
        p.grad = None
    return counted


def _bf16_compress_any_backend(process_group, bucket):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return default_hooks.bf16_compress_hook(process_group, bucket)


def _replicas_in_sync(model, dist, device) -> bool:
    """After training, every rank must hold the same weights, or DDP did not synchronise what it timed."""
    import torch

    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1).to(device)
    low, high = checksum.clone(), checksum.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    return bool(low.item() == high.item())


def allreduce_test(config: Config, group: Group, info: dict, report) -> dict[str, float]:
    from gpubench.workloads.ddp_scaling import allreduce as ddp_allreduce

    sizes = ddp_allreduce.message_sizes(config.allreduce_min_mb, config.allreduce_max_mb)
    report("allreduce", done=0, total=len(sizes))
    rows = ddp_allreduce.measure(group.device, group.world_size, sizes, config.allreduce_warmup,
                                 config.allreduce_iters, progress=lambda done, total: report("allreduce", done, total))
    info["allreduce"] = rows
    info["allreduce_dtype"] = "float32"
    info["bus_factor"] = ddp_allreduce.bus_factor(group.world_size)
    return ddp_allreduce.summary(rows)


def host_facts(group: Group) -> dict:
    """What explains a scaling number: the backend, how the GPUs connect, the NCCL settings in force."""
    import torch
    import torch.distributed as dist

    facts = {"backend": dist.get_backend(), "world_size": group.world_size, "host_gpus": group.host_gpus,
             "nccl_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}}
    if group.device.type == "cuda":
        version = torch.cuda.nccl.version()  # a tuple; an int in old releases
        facts["nccl_version"] = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        facts["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(group.world_size)]
    if group.rank == 0:  # the one result's record is rank 0's
        facts["topology"], reason = nvidia_topology()
        if reason:
            facts["topology_note"] = reason
    return facts


def nvidia_topology() -> tuple[str | None, str | None]:
    """`nvidia-smi topo -m` as it prints it, or (None, why not)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found on this host"
    try:
        done = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi topo -m failed: {exc}"
    if done.returncode != 0:
        return None, f"nvidia-smi topo -m exited {done.returncode}: {done.stderr.strip()[:200]}"
    return done.stdout, None


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """Speed-up and efficiency against the 1-GPU run of the same recipe; the study's cost and comm columns.

    Same recipe = with accumulation, against 1 GPU with accumulation (the post's footnote: "both" is 88% / 89%
    efficient). The post's 355M "both" row (3.66x) divided by the plain 1-GPU rate instead; here it is 3.55x.
    """
    by_setup = {r.setup: r for r in results}
    algbw = {SETUPS[s].gpus: r.metrics["algbw_median_gbps"].value for s, r in by_setup.items()
             if s in SETUPS and "algbw_median_gbps" in r.metrics}
    derived: dict[str, dict[str, float]] = {}
    for setup, result in by_setup.items():
        recipe = SETUPS.get(setup)
        if recipe is None or recipe.size is None or "tokens_per_s" not in result.metrics:
            continue
        values = {}
        baseline = by_setup.get(recipe.baseline)
        if baseline is not None and "tokens_per_s" in baseline.metrics:
            speedup = result.metrics["tokens_per_s"].value / baseline.metrics["tokens_per_s"].value
            values["speedup"] = speedup
            values["scaling_efficiency_pct"] = 100 * speedup / recipe.gpus
        host_gpus = (result.info or {}).get("host_gpus") or 0
        if "usd_per_1B_tokens" in result.metrics and host_gpus >= recipe.gpus:
            values["usd_per_1B_tokens_gpu_share"] = (
                result.metrics["usd_per_1B_tokens"].value * recipe.gpus / host_gpus)
        if "gradient_mb_per_step" in result.metrics and algbw.get(recipe.gpus):
            values["allreduce_ms_est"] = result.metrics["gradient_mb_per_step"].value / algbw[recipe.gpus]
        if values:
            derived[setup] = values
    return derived

