"""torch.compile vs eager training step on a 468M Llama-style model (the study's script, measured the same way).

Study: LlamaForCausalLM from a config with random init (hidden 1024, 24 layers, 16 heads, FFN 4096,
vocab 32,000), bf16 weights, batch 4 x 2,048 random tokens, loss.backward(), fused AdamW (lr 1e-4),
zero_grad(set_to_none=True). First step (includes compilation), 4 warm-up steps, then the mean of
20 timed steps; peak memory (the harness's tracker: torch's allocator on a GPU) over the timed steps.
Random weights are the study's own choice here: the compute is the same as trained weights.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpubench.config_fields import DEVICE, DTYPES, param
from gpubench.measure import compile_cache, timing
from gpubench.measure import device as measure_device
from gpubench.stats import percentile
from gpubench.workload import ConfigError, MetricDef, SetupContext


@dataclass
class Config:
    vocab_size: int = param(32000, "vocabulary size of the random Llama model", min=2)
    hidden_size: int = param(1024, "the model's hidden size", min=1)
    intermediate_size: int = param(4096, "the MLP's inner size", min=1)
    num_layers: int = param(24, "decoder layers", min=1)
    num_heads: int = param(16, "attention heads (hidden_size must divide by it)", min=1)
    batch: int = param(4, "sequences per training step", min=1)
    seq_len: int = param(2048, "tokens per sequence", min=1)
    lr: float = param(1e-4, "AdamW learning rate", min=0)
    warmup_steps: int = param(4, "untimed steps after the first one", min=0)
    timed_steps: int = param(20, "timed training steps", min=1)
    dtype: str = param("bfloat16", "the model's dtype", choices=DTYPES)
    device: str = param("auto", "where it runs", **DEVICE)
    compile_mode: str = param("default", "torch.compile's mode (the study tested the default only)",
                              choices=("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"))
    cold_compile_cache: bool = param(True,
                                     "a fresh inductor/Triton cache per compiled setup: first_step_s as on a new host")
    seed: int = param(0, "random seed of weights and tokens", min=0)

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"hidden_size {self.hidden_size} does not divide by num_heads {self.num_heads}")


SMOKE = {
    "vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128, "num_layers": 2, "num_heads": 4,
    "batch": 2, "seq_len": 64, "warmup_steps": 1, "timed_steps": 3,
}

METRICS = {
    "first_step_s": MetricDef("s", "lower", "the first training step, compilation included"),
    "step_ms": MetricDef("ms", "lower", "wall time of the timed steps / steps (the study's number)"),
    "step_ms_p50": MetricDef("ms", "lower", "median of the per-step times (CUDA events), for the spread"),
    "step_ms_p90": MetricDef("ms", "lower", "90th percentile of the per-step times"),
    "tokens_per_s": MetricDef("tokens/s", "higher", "batch x sequence / step_ms"),
    "params_m": MetricDef("M params", None, "model parameters"),
    "achieved_tflops": MetricDef("TFLOP/s", "higher", "model FLOPs per token x tokens/s (6N + 12 L H S per token)"),
}

HEADLINE = ["step_ms", "tokens_per_s", "peak_mem_gib", "first_step_s", "1M_tokens_per_usd"]  # the post's columns

SETUPS = {  # setup name -> (compile?, attn_implementation)
    "eager-sdpa": (False, "sdpa"),
    "compile-sdpa": (True, "sdpa"),
    "eager-eager": (False, "eager"),
    "compile-eager": (True, "eager"),
}
SETUP_NOTES = {
    "eager-sdpa": "eager PyTorch, PyTorch's fused SDPA attention (the baseline)",
    "compile-sdpa": "torch.compile(model), default mode, SDPA attention",
    "eager-eager": "eager PyTorch, transformers' naive matmul-softmax-matmul attention",
    "compile-eager": "torch.compile(model) over the naive attention",
}


def build_model(config: Config, attn: str, device: str):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    model_config = LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads, num_key_value_heads=config.num_heads,
        max_position_embeddings=config.seq_len, attn_implementation=attn,
    )
    return LlamaForCausalLM(model_config).to(device, dtype=getattr(torch, config.dtype))


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    use_compile, _ = SETUPS[setup]
    with compile_cache.fresh(use_compile and config.cold_compile_cache):
        return _measure(setup, config, ctx)


def _measure(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    import torch

    use_compile, attn = SETUPS[setup]
    device = measure_device.resolve(config.device)
    torch.manual_seed(config.seed)

    ctx.progress("build_model")
    model = build_model(config, attn, device)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, fused=True)
    fwd = torch.compile(model, mode=config.compile_mode) if use_compile else model
    x = torch.randint(0, config.vocab_size, (config.batch, config.seq_len), device=device)

    def step():
        loss = fwd(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    compiling = "includes compilation" if use_compile else None
    with timing.Timed(ctx, device, phase="first_step", message=compiling) as first:
        step()

    for i in range(config.warmup_steps):
        step()
        ctx.progress("warmup", done=i + 1, total=config.warmup_steps)
    measure_device.synchronize(device)
    ctx.memory.reset(device)

    # The study's number is wall time over all timed steps / steps. Per-step times come from marks queued
    # between steps (CUDA events on a GPU: no wait per step), for the spread.
    with timing.Timed(ctx, device, total=config.timed_steps) as timed:
        timed.mark()
        for _ in range(config.timed_steps):
            step()
            timed.mark()
    dt = timed.seconds / config.timed_steps
    per_step = timed.intervals_ms()
    ctx.progress("timed", done=config.timed_steps, total=config.timed_steps)

    tokens_per_s = config.batch * config.seq_len / dt
    metrics = {
        "first_step_s": first.seconds,
        "step_ms": dt * 1000,
        "step_ms_p50": statistics.median(per_step),
        "step_ms_p90": percentile(per_step, 90),
        "tokens_per_s": tokens_per_s,
        "params_m": params / 1e6,
        "achieved_tflops": tokens_per_s * flops_per_token(config, params) / 1e12,
    }
    metrics.update(ctx.memory.peak(device))
    return metrics


def flops_per_token(config: Config, params: int) -> float:
    """Training FLOPs per token: 6 per weight that multiplies (the input embedding is a lookup, not a matmul)
    plus attention's scores and values, 12 x layers x hidden x sequence (the PaLM paper's count)."""
    matmul_params = params - config.vocab_size * config.hidden_size
    return 6 * matmul_params + 12 * config.num_layers * config.hidden_size * config.seq_len
