"""The three ways the study trains a model, as its script builds them, from any of three sources.

Sources: a transformers folder (the study's Qwen/Qwen2.5-1.5B-Instruct), a GGUF file (loaded through
transformers' `gguf` support, dequantized; SmolLM2-135M-Instruct for the offline tests), or random
weights at Qwen2.5-1.5B-Instruct's shape (`qwen_config`; same compute, no download).

Methods (the study's code, with the same arguments):
- full: fp32 weights (the master copy); the loop runs the forward under bf16 autocast;
- lora: bf16 base, LoRA rank 16 / alpha 32 / dropout 0.05 on the seven attention and MLP projections;
- qlora: the same LoRA on a 4-bit NF4 base (double quantization, bf16 compute, bitsandbytes), through
  peft's `prepare_model_for_kbit_training`, which casts every layer left unquantized to fp32.
transformers quantizes to 4 bits only while loading a checkpoint folder, so a random or GGUF model is
written to a temporary folder first, in bf16 (outside the timed part, like every load).
"""

from __future__ import annotations

import gc
import importlib.util
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# Qwen2.5-1.5B-Instruct's config.json, less what a random model need not say (1,543.7 M parameters).
QWEN_FIXED = {"max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
              "tie_word_embeddings": True, "use_sliding_window": False, "hidden_act": "silu",
              "initializer_range": 0.02}


@dataclass(frozen=True)
class Source:
    kind: str  # "folder", "gguf" or "random"
    path: str = ""  # the folder, or the GGUF file
    shape: dict | None = None  # random: vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads

    def describe(self) -> str:
        if self.kind == "random":
            return "random weights at " + ", ".join(f"{k} {v}" for k, v in self.shape.items())
        return f"{self.path} ({'GGUF, dequantized by transformers' if self.kind == 'gguf' else 'transformers folder'})"


def source_for(path: str | None, shape: dict) -> Source:
    if path is None:
        return Source("random", shape=shape)
    if Path(path).is_file() and path.endswith(".gguf"):
        return Source("gguf", path)
    return Source("folder", path)


def qwen_config(shape: dict):
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
                       intermediate_size=shape["intermediate_size"], num_hidden_layers=shape["num_layers"],
                       num_attention_heads=shape["num_heads"], num_key_value_heads=shape["num_kv_heads"],
                       **QWEN_FIXED)


def load_tokenizer(source: Source):
    from transformers import AutoTokenizer

    if source.kind == "gguf":
        return AutoTokenizer.from_pretrained(str(Path(source.path).parent), gguf_file=Path(source.path).name)
    return AutoTokenizer.from_pretrained(source.path)


def _pretrained(source: Source, dtype, **kwargs):
    from transformers import AutoModelForCausalLM

    if source.kind == "gguf":
        path = Path(source.path)
        try:  # transformers 5.x keeps a GGUF's weights packed (not trainable) unless asked to unpack them
            from transformers.utils.quantization_config import GgufConfig

            kwargs["quantization_config"] = GgufConfig(gguf_file=path.name, dequantize=True)
        except ImportError:  # 4.x always unpacks
            pass
        return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype,
                                                    attn_implementation="sdpa", **kwargs)
    return AutoModelForCausalLM.from_pretrained(source.path, dtype=dtype, attn_implementation="sdpa", **kwargs)


def _plain(source: Source, dtype, device: str):
    """The model in one dtype on the device: `from_pretrained(...).to(device)`, or a random init there."""
    import torch
    from transformers import AutoModelForCausalLM

    if source.kind == "random":
        default = torch.get_default_dtype()
        torch.set_default_dtype(dtype)  # initialised in the dtype it trains in, as from_pretrained loads it
        try:
            with torch.device(device):
                return AutoModelForCausalLM.from_config(qwen_config(source.shape), attn_implementation="sdpa")
        finally:
            torch.set_default_dtype(default)
    return _pretrained(source, dtype).to(device)


def build(method: str, source: Source, device: str, lora: dict[str, Any], stack: ExitStack, memory,
          dtype: str = "bfloat16"):
    """The model ready for the study's loop; `stack` keeps any temporary checkpoint until the run ends; `memory` is
    the setup's peak-memory tracker (ctx.memory); `dtype` is LoRA's base weights' and QLoRA's compute dtype."""
    import torch

    half = getattr(torch, dtype)
    if method == "full":
        return _plain(source, torch.float32, device)
    if method == "lora":
        model = _plain(source, half, device)
    elif method == "qlora":
        model = _quantized(source, device, stack, memory, half)
    else:
        raise ValueError(f"unknown method {method!r}")
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                            task_type="CAUSAL_LM", target_modules=LORA_TARGETS))


def _quantized(source: Source, device: str, stack: ExitStack, memory, compute_dtype):
    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    if importlib.util.find_spec("bitsandbytes") is None:
        raise RuntimeError("qlora needs bitsandbytes, which is not installed (the study used 0.50.2, whose CPU"
                           " backend also runs NF4): pip install bitsandbytes==0.50.2")
    if source.kind != "folder":
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="gpubench-finetune-"))
        _write_checkpoint(_plain(source, compute_dtype, device), folder)
        gc.collect()  # the bf16 copy, before the 4-bit one is loaded and memory is measured
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        memory.reset(device)
        source = Source("folder", folder)
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=compute_dtype)
    # dtype: transformers 4.57 (the study's) loads what stays unquantized in fp32 when no dtype is given;
    # said explicitly, 5.x does the same. prepare_model_for_kbit_training makes it fp32 either way.
    model = _pretrained(source, torch.float32, quantization_config=quant,
                        device_map={"": device})
    # On a CPU with AVX512-BF16, bitsandbytes (0.50.2) repacks a 4-bit weight for its inference kernel at the first
    # eval-mode forward without grad (the held-out loss before training) and never unpacks it, so every later
    # forward, training included, takes that inference-only path, whose `result += bias` autograd refuses. Training
    # alternates with evaluation here: keep the training layout.
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False
    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)


def _write_checkpoint(model, folder: str) -> None:
    """config.json + model.safetensors; not save_pretrained, which refuses a model that came from a GGUF."""
    from safetensors.torch import save_file

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the GGUF's, already unpacked
    config.save_pretrained(folder)
    # Tied embeddings are stored once, under the input embedding's name as save_pretrained does: safetensors'
    # save_model may keep lm_head's name instead, which transformers 4.57.1 (the image's) leaves on the meta device
    # when it quantizes. It also loads only files marked format "pt".
    state = model.state_dict()
    if getattr(config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    save_file({name: tensor.contiguous() for name, tensor in state.items()}, str(Path(folder) / "model.safetensors"),
              metadata={"format": "pt"})


def parameter_counts(model, method: str) -> tuple[int, int]:
    """(trainable, all) parameters; a 4-bit weight counts as the parameters it stands for (peft's count)."""
    if method == "full":
        n = sum(p.numel() for p in model.parameters())
        return sum(p.numel() for p in model.parameters() if p.requires_grad), n
    return model.get_nb_trainable_parameters()
