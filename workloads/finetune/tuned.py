"""lora-tuned: the study's LoRA training, fed so that the GPU is not left waiting on the host.

On an H200 the study's loop (micro-batch 4, four forward/backward passes a step) keeps the GPU busy about
12% of the time while one host thread is saturated launching kernels: the step time is the launch count.
This setup trains the same LoRA model on the same examples, the same examples per step, steps, schedule,
learning rate and clipping, and changes only how each step is fed:

- packing: each step's examples are one row, with position ids restarting at each example and a
  block-diagonal causal mask built on the GPU (no example sees another); one forward and one backward a step
  instead of four. Rows are padded up to a multiple of BUCKET tokens (padding is masked off and unlabelled),
  so there are only a few shapes;
- on a GPU (`tuned_cuda_graphs`), the forward and backward of each row width captured once as a CUDA graph
  (torch.cuda.make_graphed_callables): a step launches two graphs instead of thousands of kernels. The
  capture's warm-up passes change no weight and are reported as `warmup_s`, outside the timed steps.
  torch.compile was tried first: on the H200 (2026-12-01) the whole 28-layer PEFT model's compile with dynamic
  shapes had not finished after 4.5 minutes; packing alone gave 4.7x the study's loop at 43% GPU busy;
- a fused AdamW (one kernel for the whole update).

Attention over a packed row runs densely under the block-diagonal mask, and the FLOP counter counts it so:
achieved TFLOP/s here includes those executed, masked-out products (FLOPs per token are counted on unpadded
rows and multiplied by the padded tokens computed).

The loss of a step is the mean over its answer tokens (the study's is the mean of its micro-batches'
means: the same within noise). Tokens/s counts the training examples' tokens, padding excluded, as the
study's setups do. The held-out loss is the study's function on the study's held-out micro-batches.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from typing import Any

from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.workload import SetupContext

SETUP = "lora-tuned"
STUDY_SETUP = "lora-mb4"  # what the tuned setup is measured against


def examples_per_step(config) -> int:
    """The study's LoRA examples per step (16 unless micro_batch/accumulation are overridden)."""
    micro, accumulation = config.batching(STUDY_SETUP)
    return micro * accumulation


def pack(examples, ignore: int) -> dict[str, Any]:
    """One row of the examples back to back: input ids, labels, position ids restarting at each example, and
    each token's example number (`example`, for the attention mask). Every example's first label is a prompt
    token (IGNORE), so no token learns to predict the next example."""
    import torch

    ids, labels, positions, owner = [], [], [], []
    for number, example in enumerate(examples):
        ids += example.input_ids
        labels += [ignore] + list(example.labels[1:])
        positions += range(len(example.input_ids))
        owner += [number] * len(example.input_ids)
    return {"input_ids": torch.tensor([ids]), "labels": torch.tensor([labels]),
            "position_ids": torch.tensor([positions]), "example": torch.tensor(owner)}


def block_causal_mask(example):
    """[1, 1, T, T] booleans: a token sees the earlier tokens of its own example only. Built on the device from
    the example numbers, so transformers need not find the packing itself (which reads a value back from the
    GPU each forward, a wait that leaves the GPU idle while the host launches the next pass)."""
    import torch

    n = example.numel()
    causal = torch.ones(n, n, dtype=torch.bool, device=example.device).tril_()
    return (causal & (example[:, None] == example[None, :]))[None, None]


BUCKET = 1024  # each packed row is padded up to a multiple of this: a few static shapes, one CUDA graph each
INPUTS = ("input_ids", "position_ids", "labels", "example")


def pad_row(row, pad_id: int, ignore: int, bucket: int = BUCKET):
    """The row padded up to a multiple of `bucket` tokens: padding is its own example (-1) that no real token
    sees, with no labels, so the loss and every real token's attention are unchanged."""
    import torch

    n = row["input_ids"].shape[1]
    extra = -(-n // bucket) * bucket - n
    if not extra:
        return row
    return {"input_ids": torch.cat([row["input_ids"], torch.full((1, extra), pad_id)], 1),
            "labels": torch.cat([row["labels"], torch.full((1, extra), ignore)], 1),
            "position_ids": torch.cat([row["position_ids"], torch.arange(extra)[None]], 1),
            "example": torch.cat([row["example"], torch.full((extra,), -1)])}


def packed_loss(model, device_type: str, dtype: str = "bfloat16"):
    """A module computing one packed row's loss from INPUTS (tensors only, as CUDA graphs need), under bf16
    autocast without its weight cache (which graphs cannot hold); in float32, no autocast."""
    import torch

    class PackedLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, position_ids, labels, example):
            with torch.autocast(device_type, dtype=torch.bfloat16, cache_enabled=False, enabled=dtype != "float32"):
                return self.model(input_ids=input_ids, position_ids=position_ids, labels=labels,
                                  attention_mask=block_causal_mask(example), use_cache=False).loss

    return PackedLoss()


def step_functions(model, rows, device: str, graphs: bool, info: dict, dtype: str = "bfloat16") -> dict:
    """{row width: loss function}: a captured CUDA graph of the forward and backward per width when asked
    (torch.cuda.make_graphed_callables; its warm-up passes change no weight), else the eager module."""
    import torch

    widths = sorted({row["input_ids"].shape[1] for row in rows})
    eager = packed_loss(model, device.split(":")[0], dtype)
    if not graphs:
        info["cuda_graphs"] = "off"
        return dict.fromkeys(widths, eager)
    out = {}
    try:
        for width in widths:
            sample = next(row for row in rows if row["input_ids"].shape[1] == width)
            args = tuple(sample[k].to(device) for k in INPUTS)
            out[width] = torch.cuda.make_graphed_callables(packed_loss(model, "cuda", dtype), args)
    except Exception as exc:  # noqa: BLE001 - say so and run eager: the result names what it measured
        measure_device.synchronize(device)
        info["cuda_graphs"] = f"failed, ran eager: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        return dict.fromkeys(widths, eager)
    info["cuda_graphs"] = f"one graph of forward and backward per row width: {widths}"
    return out


def model_inputs(row, device: str) -> dict[str, Any]:
    moved = {k: v.to(device, non_blocking=True) for k, v in row.items()}
    moved["attention_mask"] = block_causal_mask(moved.pop("example"))
    return moved


def run_setup(setup: str, config, ctx: SetupContext) -> dict[str, float]:

    import torch
    from transformers import get_cosine_schedule_with_warmup

    from gpubench.workloads import finetune
    from gpubench.workloads.finetune import data, models

    per_step = examples_per_step(config)
    micro, _ = config.batching(STUDY_SETUP)
    device = measure_device.resolve(config.device, indexed=True)
    on_cuda = device.startswith("cuda")
    if config.cpu_threads:
        torch.set_num_threads(config.cpu_threads)
    torch.manual_seed(config.seed)

    ctx.progress("data")
    source, records, tokenizer, info = finetune._sources(config, ctx)
    train, heldout = data.shuffle_split(records, config.seed, config.train_examples, config.heldout_examples)
    train = data.tokenize(train[:config.steps * per_step], tokenizer, config.max_len)
    heldout = data.tokenize(heldout, tokenizer, config.max_len)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = [pack(train[step * per_step:(step + 1) * per_step], data.IGNORE) for step in range(config.steps)]
    flop_rows = [{k: v for k, v in row.items() if k != "example"} for row in rows[:finetune.FLOP_COUNT_BATCHES]]
    heldout_batches = list(data.micro_batches(heldout, micro, pad_id))  # the study's held-out micro-batches
    ctx.dtype = config.dtype
    ctx.info.update(info, method="lora", examples_per_step=per_step,
                    steps=config.steps, packing="one row per step, position ids restart per example",
                    bucket_tokens=BUCKET, optimizer="AdamW fused" if on_cuda else "AdamW foreach",
                    tokens_counted="training examples' tokens, no padding (as the study's setups)",
                    heldout=f"the study's {len(heldout)} held-out examples in micro-batches of {micro}")

    with ExitStack() as stack:
        ctx.progress("build_model", message=f"lora from {source.kind}")
        model = models.build("lora", source, device, {"r": config.lora_r, "alpha": config.lora_alpha,
                                                      "dropout": config.lora_dropout}, stack, ctx.memory,
                             config.dtype)
        model.config.use_cache = False  # a cache would turn off transformers' packed-sequence masking
        trainable, total = models.parameter_counts(model, "lora")
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=config.lr_lora, weight_decay=0.0,
                                **({"fused": True} if on_cuda else {"foreach": True}))
        schedule = get_cosine_schedule_with_warmup(opt, config.warmup_steps, config.steps)

        autocast = finetune.half_autocast(device, config.dtype)
        ctx.progress("eval_before", total=len(heldout_batches))
        loss_before = finetune.heldout_loss(model, heldout_batches, device, autocast)

        model.train()
        rows = [pad_row(row, pad_id, data.IGNORE) for row in rows]
        if on_cuda:
            rows = [{k: v.pin_memory() for k, v in row.items()} for row in rows]
        graphs = on_cuda and config.tuned_cuda_graphs
        with timing.Timed(ctx, device, phase="warmup", message="CUDA graphs" if graphs else "first passes") as warmup:
            passes = step_functions(model, rows, device, graphs, ctx.info, config.dtype)
            opt.zero_grad(set_to_none=True)

        def loss_of(row):
            args = [row[k].to(device, non_blocking=True) for k in INPUTS]
            return passes[row["input_ids"].shape[1]](*args)

        every = max(1, config.steps // 20)
        with timing.Timed(ctx, device, phase="train", total=config.steps) as training:
            for step, row in enumerate(rows):
                loss_of(row).backward()
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm, foreach=True)
                opt.step()
                schedule.step()
                opt.zero_grad(set_to_none=True)
                if (step + 1) % every == 0:
                    ctx.progress("train", done=step + 1, total=config.steps)
        train_s = training.seconds
        peak = ctx.memory.peak(device)

        ctx.progress("count_flops")
        flops_per_token = finetune.count_flops_per_token(model, flop_rows, device, autocast)
        ctx.info["flops_per_token"] = flops_per_token
        opt.zero_grad(set_to_none=True)
        ctx.progress("eval_after", total=len(heldout_batches))
        loss_after = finetune.heldout_loss(model, heldout_batches, device, autocast)

    tokens = sum(len(e.input_ids) for e in train)
    computed = sum(row["input_ids"].numel() for row in rows)
    metrics = {
        "trainable_params_m": trainable / 1e6,
        "trainable_pct": 100.0 * trainable / total,
        "train_s": train_s,
        "warmup_s": warmup.seconds,
        "tokens_per_s": tokens / train_s,
        "achieved_tflops": flops_per_token * computed / train_s / 1e12,
        "train_tokens": tokens,
        "examples_per_step": per_step,
        "eval_loss_before": loss_before,
        "eval_loss_after": loss_after,
        "eval_loss_drop": loss_before - loss_after,
    }
    if not math.isfinite(loss_after):
        raise FloatingPointError(f"held-out loss is {loss_after}")
    metrics.update(peak)
    return metrics


def derive(values: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The tuned setup against the study's loop in the same run: speed and held-out loss."""
    tuned, study = values.get(SETUP), values.get(STUDY_SETUP)
    if not tuned or not study:
        return {}
    return {SETUP: {"speedup_vs_study": tuned["tokens_per_s"] / study["tokens_per_s"],
                    "loss_vs_study": tuned["eval_loss_after"] - study["eval_loss_after"]}}
