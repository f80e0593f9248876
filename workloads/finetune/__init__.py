"""Full fine-tune vs LoRA vs QLoRA on Qwen2.5-1.5B-Instruct: memory, speed and held-out loss (the study's loop).

Study: yahma/alpaca-cleaned shuffled with a fixed seed, 4,000 training examples (753,486 tokens) and
the next 300 held out; the model's chat template, loss on the answer tokens only, at most 512 tokens.
One epoch: 250 optimizer steps of 16 examples (micro-batch x accumulation), cosine schedule with 10
warm-up steps, gradient clipping at 1.0, AdamW (weight decay 0), no gradient checkpointing, every
forward under bf16 autocast. full: fp32 weights, lr 1e-5; LoRA: bf16 base, r 16, alpha 32, dropout
0.05, lr 2e-4; QLoRA: that LoRA on an NF4 base (models.py). Measured: trainable parameters,
training wall time (model load and evaluation excluded), tokens/s (the training examples' tokens,
padding excluded, over that time), peak memory to the end of training (the harness's tracker: torch's allocator,
GiB; peak RSS on a CPU) and the held-out loss before and after (mean over the held-out answer tokens).

The study ran on an L40S, 44.4 GiB usable, where full fine-tuning ran out of memory at micro-batch 8;
`memory_limit_gib` caps PyTorch's allocator so a larger card reproduces that row.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gpubench.config_fields import DEVICE, param
from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.workload import ConfigError, MetricDef, SetupContext

MODEL_REPO = "Qwen/Qwen2.5-1.5B-Instruct"
DATA_REPO = "datasets/yahma/alpaca-cleaned"
EXAMPLES_PER_STEP = 16  # the study's micro-batch x accumulation
GIB = 2**30


@dataclass
class Config:
    model_file: str = param("", "empty: the study's model (random at the shape below with --weights random); random;"
                                " or a transformers folder or a .gguf file")
    data_file: str = param("", "empty: yahma/alpaca-cleaned (synthetic with --weights random); synthetic; or an"
                               " alpaca-format .json / .jsonl file")
    seed: int = param(42, "random seed of data order, LoRA init and random weights", min=0)
    train_examples: int = param(4000, "training examples drawn from the data set", min=1)
    heldout_examples: int = param(300, "held-out examples for eval_loss", min=1)
    max_len: int = param(512, "tokens per example, at most", min=8)
    steps: int = param(250, "optimizer steps", min=1)
    micro_batch: int = param(0, "examples per forward/backward; 0: the setup's (4 or 8)", min=0)
    accumulation: int = param(0, "micro-batches per optimizer step; 0: 16 examples per step / micro-batch", min=0)
    warmup_steps: int = param(10, "learning-rate warm-up steps", min=0)
    max_grad_norm: float = param(1.0, "gradient clipping norm", min=0)
    lr_full: float = param(1e-5, "learning rate of the full fine-tune", min=0)
    lr_lora: float = param(2e-4, "learning rate of LoRA and QLoRA", min=0)
    lora_r: int = param(16, "LoRA rank", min=1)
    lora_alpha: int = param(32, "LoRA alpha", min=1)
    lora_dropout: float = param(0.05, "LoRA dropout", min=0, max=1)
    answer_tokens: int = param(48, "greedy answers to PROMPTS after training (real weights only); 0: none", min=0)
    device: str = param("auto", "where it runs", **DEVICE)
    cpu_threads: int = param(0, "torch's intra-op threads on a CPU; 0: torch's default", min=0)
    dtype: str = param("bfloat16", "the loop's half precision: LoRA's base weights, QLoRA's compute, every forward's"
                                   " autocast; float32 for a GPU or CPU without bf16 (full keeps fp32 weights)",
                       choices=("bfloat16", "float32"))
    memory_limit_gib: float = param(0.0, "cap on PyTorch's CUDA allocator (44.4: the study's L40S); 0: the whole card",
                                    min=0)
    tuned_cuda_graphs: bool = param(True, "lora-tuned on a GPU: forward and backward as CUDA graphs (eager if capture"
                                                 " fails)")
    # Qwen2.5-1.5B-Instruct's shape, for random weights
    vocab_size: int = param(151936, "random weights' vocabulary size (Qwen2.5-1.5B-Instruct's shape)", min=2)
    hidden_size: int = param(1536, "random weights' hidden size", min=1)
    intermediate_size: int = param(8960, "random weights' MLP inner size", min=1)
    num_layers: int = param(28, "random weights' decoder layers", min=1)
    num_heads: int = param(12, "random weights' attention heads", min=1)
    num_kv_heads: int = param(2, "random weights' key/value heads", min=1)

    def __post_init__(self):
        for name in ("model_file", "data_file"):
            value = getattr(self, name)
            if value not in ("", "random", "synthetic") and not Path(value).exists():
                raise ConfigError(f"--set {name}={value}: no such file or folder")
        if self.model_file == "synthetic" or self.data_file == "random":
            raise ConfigError("model_file may be 'random', data_file 'synthetic'")
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ConfigError(f"hidden_size {self.hidden_size}, num_heads {self.num_heads}, num_kv_heads"
                              f" {self.num_kv_heads}: the heads must divide the hidden size, the kv heads the heads")
        for setup in SETUPS:
            micro, accumulation = self.batching(setup)
            if self.steps * micro * accumulation > self.train_examples:
                raise ConfigError(f"{setup}: {self.steps} steps x {micro * accumulation} examples is more than the"
                                  f" {self.train_examples} training examples (one epoch at most)")

    def batching(self, setup: str) -> tuple[int, int]:
        """(micro-batch, accumulation steps) of a setup: 4 x 4 or 8 x 2 unless overridden."""
        micro = self.micro_batch or SETUPS[setup][1]
        if self.accumulation:
            return micro, self.accumulation
        if EXAMPLES_PER_STEP % micro:
            raise ConfigError(f"micro_batch={micro} does not divide the study's {EXAMPLES_PER_STEP} examples per"
                              " step; set accumulation too")
        return micro, EXAMPLES_PER_STEP // micro

    def shape(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
                              "num_kv_heads")}


SMOKE = {
    "model_file": "random", "data_file": "synthetic", "vocab_size": 512, "hidden_size": 64,
    "intermediate_size": 128, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
    "train_examples": 48, "heldout_examples": 8, "max_len": 96, "steps": 3, "warmup_steps": 1,
    "cpu_threads": 1,  # a model this small only loses to thread start-up and contention
}

HEADLINE = [  # the post's table columns, in its order
    "trainable_params_m", "train_s", "tokens_per_s", "peak_mem_gib", "eval_loss_before", "eval_loss_after",
    "usd_per_training_run",
]

TIMED_PHASES = ("train",)  # what utilisation is summarised over: the timed steps

METRICS = {
    "trainable_params_m": MetricDef("M params", None, "parameters the optimizer updates, millions"),
    "trainable_pct": MetricDef("%", None, "trainable parameters as a share of the model's"),
    "train_s": MetricDef("s", "lower", "wall time of the timed training steps"),
    "tokens_per_s": MetricDef("tokens/s", "higher", "training tokens processed per second: the study's headline"),
    "achieved_tflops": MetricDef(
        "TFLOP/s", "higher", "counted forward + backward FLOPs per padded token x padded tokens trained / train_s"),
    "train_tokens": MetricDef("tokens", None, "tokens processed in the timed steps"),
    "eval_loss_before": MetricDef("nats/token", None, "held-out loss before training"),
    "eval_loss_after": MetricDef("nats/token", "lower", "held-out loss after training"),
    "eval_loss_drop": MetricDef("nats/token", "higher", "eval_loss_before - eval_loss_after: the training did learn"),
    # across setups (derive), at the same micro-batch
    "speedup_vs_full": MetricDef("x", "higher", "tokens_per_s over the full fine-tune's at the same micro-batch"),
    "memory_vs_full": MetricDef("ratio", "lower", "peak_mem_gib over the full fine-tune's at the same micro-batch"),
    "speedup_vs_mb8": MetricDef("x", "higher", "tokens_per_s at micro-batch 4 over the same method's at micro-batch 8"),
    "peak_mem_over_lora_gib": MetricDef("GiB", "lower", "peak_mem_gib minus LoRA's at the same micro-batch"),
    "loss_before_over_lora": MetricDef(
        "nats/token", "lower", "eval_loss_before minus LoRA's (QLoRA's 4-bit quantisation cost)"),
    # lora-tuned (finetune/tuned.py)
    "warmup_s": MetricDef("s", "lower", "lora-tuned: untimed graph capture / first passes before the timed steps"),
    "examples_per_step": MetricDef("examples", None, "training examples per optimizer step"),
    "speedup_vs_study": MetricDef("x", "higher", "lora-tuned's tokens_per_s over lora-mb4's in the same run"),
    "loss_vs_study": MetricDef("nats/token", None, "lora-tuned's eval_loss_after minus lora-mb4's in the same run"),
}

# The post compared the three models' answers to three fixed prompts and names one of them; the other two are ours.
PROMPTS = (
    "Rewrite this sentence in the passive voice: The cat chased the mouse.",
    "Give three tips for staying healthy.",
    "What is the capital of France?",
)

SETUPS = {  # setup name -> (method, micro-batch)
    "full-mb4": ("full", 4),
    "lora-mb4": ("lora", 4),
    "qlora-mb4": ("qlora", 4),
    "full-mb8": ("full", 8),
    "lora-mb8": ("lora", 8),
    "qlora-mb8": ("qlora", 8),
    "lora-tuned": ("lora", EXAMPLES_PER_STEP),  # not the study's: finetune/tuned.py
}


SETUP_NOTES = {
    f"{method}-mb{mb}": f"{label}, micro-batch {mb}" for method, label in (
        ("full", "full fine-tune, every weight trained (fp32 weights, bf16 autocast, AdamW)"),
        ("lora", "LoRA adapters on a frozen bf16 model"),
        ("qlora", "QLoRA: LoRA adapters on a 4-bit NF4 model (bitsandbytes)"),
    ) for mb in (4, 8)
} | {"lora-tuned": "LoRA as lora-mb4; each step's 16 examples packed in one row, one pass a step as a CUDA graph,"
                 " fused AdamW (ours)"}


def weights_for(setup: str, config: Config) -> list[str]:
    return [repo for repo, field in ((MODEL_REPO, config.model_file), (DATA_REPO, config.data_file)) if field == ""]


def _sources(config: Config, ctx: SetupContext):
    """(model source, records, tokenizer, info): what the setup trains, and a description of it."""
    from gpubench.weights import revision
    from gpubench.workloads.finetune import data, models

    model_path = None if config.model_file == "random" else (config.model_file or ctx.weight_paths.get(MODEL_REPO))
    source = models.source_for(model_path, config.shape())
    info: dict[str, Any] = {"model": source.describe()}
    data_path = None if config.data_file == "synthetic" else (config.data_file or ctx.weight_paths.get(DATA_REPO))

    needed = config.train_examples + config.heldout_examples
    if data_path is None or source.kind == "random":
        tokenizer = data.byte_tokenizer()
        info["tokenizer"] = "bytes (one token per byte) with the ChatML template: " + (
            "the synthetic set's lengths are Qwen's" if data_path is None else "no real tokenizer with random weights")
    else:
        tokenizer = models.load_tokenizer(source)
        info["tokenizer"] = "the model's, with its chat template"
    if data_path is None:
        records = data.synthetic_records(needed, config.seed, tokenizer)
        info["data"] = (f"synthetic alpaca-format set of {needed} records (no real data set: --weights random or"
                        " data_file=synthetic); token lengths from a model of alpaca-cleaned under Qwen2.5's chat"
                        " template, 188.4 tokens per example on average as in the study")
    else:
        records = data.load_records(data_path)
        if config.data_file:
            info["data"] = data_path
        else:
            info.update(data=f"{DATA_REPO} at {data_path}", data_revision=revision(data_path))
    return source, records, tokenizer, info


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    import torch
    from transformers import get_cosine_schedule_with_warmup

    from gpubench.workloads.finetune import data, models

    if setup == "lora-tuned":
        from gpubench.workloads.finetune import tuned

        return tuned.run_setup(setup, config, ctx)
    method, _ = SETUPS[setup]
    micro, accumulation = config.batching(setup)
    device = measure_device.resolve(config.device, indexed=True)
    on_cuda = device.startswith("cuda")
    if config.cpu_threads:
        torch.set_num_threads(config.cpu_threads)
    torch.manual_seed(config.seed)
    if on_cuda and config.memory_limit_gib:
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, config.memory_limit_gib * GIB / total), device)

    ctx.progress("data")
    source, records, tokenizer, info = _sources(config, ctx)
    train, heldout = data.shuffle_split(records, config.seed, config.train_examples, config.heldout_examples)
    train = data.tokenize(train[:config.steps * micro * accumulation], tokenizer, config.max_len)
    heldout = data.tokenize(heldout, tokenizer, config.max_len)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    train_batches = list(data.micro_batches(train, micro, pad_id))
    heldout_batches = list(data.micro_batches(heldout, micro, pad_id))
    ctx.dtype = config.dtype
    ctx.info.update(info, method=method, micro_batch=micro, accumulation=accumulation,
                    steps=config.steps,
                    memory_limit_gib=(config.memory_limit_gib or None) if on_cuda else None)

    with ExitStack() as stack:
        ctx.progress("build_model", message=f"{method} from {source.kind}")
        model = models.build(method, source, device, {"r": config.lora_r, "alpha": config.lora_alpha,
                                                      "dropout": config.lora_dropout}, stack, ctx.memory,
                             config.dtype)
        if len(tokenizer) > model.get_input_embeddings().num_embeddings:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, the model's embedding "
                             f"{model.get_input_embeddings().num_embeddings}")
        trainable, total = models.parameter_counts(model, method)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=config.lr_full if method == "full" else config.lr_lora, weight_decay=0.0)
        schedule = get_cosine_schedule_with_warmup(opt, config.warmup_steps, config.steps)

        autocast = half_autocast(device, config.dtype)
        ctx.progress("eval_before", total=len(heldout_batches))
        loss_before = heldout_loss(model, heldout_batches, device, autocast)

        every = max(1, config.steps // 20)
        model.train()
        computed = 0  # padded tokens through forward and backward
        with timing.Timed(ctx, device, phase="train", total=config.steps) as training:
            for step in range(config.steps):
                for batch in train_batches[step * accumulation:(step + 1) * accumulation]:
                    if not (batch["labels"][:, 1:] != data.IGNORE).any():
                        continue  # every answer token cut at max_len: no loss to take
                    computed += batch["input_ids"].numel()
                    batch = {k: v.to(device) for k, v in batch.items()}
                    with autocast():
                        loss = model(**batch).loss
                    (loss / accumulation).backward()
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                opt.step()
                schedule.step()
                opt.zero_grad(set_to_none=True)
                if (step + 1) % every == 0:
                    ctx.progress("train", done=step + 1, total=config.steps)
        train_s = training.seconds
        peak = ctx.memory.peak(device)
        ctx.progress("count_flops")
        flops_per_token = count_flops_per_token(model, train_batches, device, autocast)
        ctx.info["flops_per_token"] = flops_per_token
        opt.zero_grad(set_to_none=True)

        ctx.progress("eval_after", total=len(heldout_batches))
        loss_after = heldout_loss(model, heldout_batches, device, autocast)
        if config.answer_tokens and source.kind != "random":
            ctx.progress("answers", total=len(PROMPTS))
            ctx.info["answers"] = answers(model, tokenizer, device, autocast, config.answer_tokens)

    tokens = sum(len(e.input_ids) for e in train)
    metrics = {
        "trainable_params_m": trainable / 1e6,
        "trainable_pct": 100.0 * trainable / total,
        "train_s": train_s,
        "tokens_per_s": tokens / train_s,
        "achieved_tflops": flops_per_token * computed / train_s / 1e12,
        "train_tokens": tokens,
        "eval_loss_before": loss_before,
        "eval_loss_after": loss_after,
        "eval_loss_drop": loss_before - loss_after,
    }
    metrics.update(peak)
    return metrics


FLOP_COUNT_BATCHES = 4


def half_autocast(device: str, dtype: str):
    """The loops' mixed precision: a fresh bf16 autocast context for each use (switched off in float32)."""
    import torch

    return lambda: torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=dtype != "float32")


def count_flops_per_token(model, batches, device: str, autocast) -> float:
    """Counted forward + backward FLOPs per padded token over a few training micro-batches (padding is
    computed like any token; LoRA's frozen weights get no weight gradient, which the count shows)."""
    from gpubench.measure import flops

    sample = batches[:FLOP_COUNT_BATCHES]

    def steps():
        for batch in sample:
            with autocast():
                loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
            loss.backward()

    return flops.count(steps) / sum(batch["input_ids"].numel() for batch in sample)


def heldout_loss(model, batches, device: str, autocast) -> float:
    """Mean loss per held-out answer token (each micro-batch's mean weighted by its answer tokens)."""
    import torch

    from gpubench.workloads.finetune.data import IGNORE

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            n = int((batch["labels"][:, 1:] != IGNORE).sum())
            if n == 0:
                continue
            with autocast():
                loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
            total += float(loss) * n
            count += n
    model.train()
    if not count:
        raise ValueError("no held-out answer tokens within max_len")
    loss = total / count
    if not math.isfinite(loss):
        raise FloatingPointError(f"held-out loss is {loss}")
    return loss


def answers(model, tokenizer, device: str, autocast, max_new_tokens: int) -> dict[str, str]:
    """{prompt: the model's greedy answer} for the post's fixed prompts, rendered with the chat template."""
    import torch

    model.eval()
    out = {}
    for prompt in PROMPTS:
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"].to(device)
        with torch.no_grad(), autocast():
            generated = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                       max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id)
        out[prompt] = tokenizer.decode(generated[0, ids.shape[1]:], skip_special_tokens=True).strip()
    return out


def derive(config: Config, results) -> dict[str, dict[str, float]]:
    """The study's comparisons at one micro-batch: LoRA/QLoRA against full and QLoRA against LoRA;
    and micro-batch 4 against 8 for each method."""
    values = {r.setup: {name: m.value for name, m in r.metrics.items()} for r in results}
    out: dict[str, dict[str, float]] = {}
    for setup, mine in values.items():
        method, micro = SETUPS[setup]
        full, lora = values.get(f"full-mb{micro}"), values.get(f"lora-mb{micro}")
        mb8 = values.get(f"{method}-mb8") if micro == 4 else None
        derived: dict[str, float] = {}
        if method != "full" and full:
            derived["speedup_vs_full"] = full["train_s"] / mine["train_s"]
            if "peak_mem_gib" in mine and "peak_mem_gib" in full:
                derived["memory_vs_full"] = mine["peak_mem_gib"] / full["peak_mem_gib"]
        if method == "qlora" and lora:
            if "peak_mem_gib" in mine and "peak_mem_gib" in lora:
                derived["peak_mem_over_lora_gib"] = mine["peak_mem_gib"] - lora["peak_mem_gib"]
            derived["loss_before_over_lora"] = mine["eval_loss_before"] - lora["eval_loss_before"]
        if mb8:
            derived["speedup_vs_mb8"] = mb8["train_s"] / mine["train_s"]
        if derived:
            out[setup] = derived
    from gpubench.workloads.finetune import tuned

    out.update(tuned.derive(values))
    return out
