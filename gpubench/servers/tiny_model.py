"""A Qwen2 model folder a server can load without a model hub: config, a locally built tokenizer, weights.

Two uses: a tiny random-weight checkpoint for the CPU tests and `--smoke` runs (seconds to build),
and `--weights random` at the study's shape, where only config + tokenizer are written and the
server makes random weights itself (vLLM's `--load-format dummy`: same compute, no 15 GB file).
The tokenizer is a byte-level BPE with Qwen2's pre-tokenizer and exactly the model's vocabulary size
(gpubench/servers/full_vocab_tokenizer.py: every id a random model samples decodes to text of its own),
with Qwen's special tokens and its ChatML chat template.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

# Qwen2.5's ChatML template, without its tool-calling branches.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@dataclass(frozen=True)
class Qwen2Shape:
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    max_position_embeddings: int


# Qwen/Qwen2.5-7B-Instruct's config.json.
QWEN25_7B = Qwen2Shape(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768)
# Small enough to build and serve on two CPU cores in seconds; head size 64, which CPU attention kernels support.
# Qwen2.5's vocabulary, so the smoke serves and streams the same tokenizer as `--weights random` at full size.
TINY = Qwen2Shape(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, vocab_size=QWEN25_7B.vocab_size, max_position_embeddings=8192)


def write_qwen2(folder: str | Path, shape: Qwen2Shape = TINY, weights: bool = True, seed: int = 0) -> Path:
    """Write a loadable Qwen2 folder; `weights=False` leaves the weights to the server (dummy load)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer_size = _write_tokenizer(folder, shape.vocab_size)
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", **asdict(shape),
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": False,
        "use_sliding_window": False, "sliding_window": None, "max_window_layers": shape.num_hidden_layers,
        "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
        "bos_token_id": _special_id("<|endoftext|>", tokenizer_size), "eos_token_id": _special_id("<|im_end|>",
                                                                                                    tokenizer_size),
        "torch_dtype": "bfloat16",
        "transformers_version": "5.0.0",  # older or none: transformers 5 checks the tokenizer for Mistral's regex bug
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": config["bos_token_id"], "eos_token_id": [config["eos_token_id"]], "do_sample": False}))
    if weights:
        _write_weights(folder / "model.safetensors", shape, seed)
    return folder


def _special_id(token: str, tokenizer_size: int) -> int:
    # The special tokens take the last ids, in SPECIAL_TOKENS order (full_vocab_tokenizer.build).
    return tokenizer_size - len(SPECIAL_TOKENS) + SPECIAL_TOKENS.index(token)


def _write_tokenizer(folder: Path, vocab_size: int) -> int:
    """tokenizer.json with exactly the model's vocabulary (gpubench/servers/full_vocab_tokenizer.py)."""
    from gpubench.servers.full_vocab_tokenizer import cached_json

    (folder / "tokenizer.json").write_text(cached_json(vocab_size, SPECIAL_TOKENS), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
        # None: transformers would mark a named token special, and vLLM would then not stream it
        "bos_token": None, "eos_token": None, "pad_token": None, "unk_token": None,
        "model_max_length": 131072, "clean_up_tokenization_spaces": False, "add_bos_token": False,
    }, indent=2))
    return vocab_size


def tensor_shapes(shape: Qwen2Shape) -> dict[str, tuple[tuple[int, ...], str]]:
    """Every tensor Qwen2ForCausalLM loads: name -> (dimensions, "normal" for N(0, 0.02) or "ones" for a norm)."""
    head_dim = shape.hidden_size // shape.num_attention_heads
    kv = shape.num_key_value_heads * head_dim
    h, ffn = shape.hidden_size, shape.intermediate_size
    tensors = {"model.embed_tokens.weight": ((shape.vocab_size, h), "normal"),
               "lm_head.weight": ((shape.vocab_size, h), "normal"), "model.norm.weight": ((h,), "ones")}
    for i in range(shape.num_hidden_layers):
        p = f"model.layers.{i}."
        tensors.update({
            p + "self_attn.q_proj.weight": ((h, h), "normal"), p + "self_attn.q_proj.bias": ((h,), "normal"),
            p + "self_attn.k_proj.weight": ((kv, h), "normal"), p + "self_attn.k_proj.bias": ((kv,), "normal"),
            p + "self_attn.v_proj.weight": ((kv, h), "normal"), p + "self_attn.v_proj.bias": ((kv,), "normal"),
            p + "self_attn.o_proj.weight": ((h, h), "normal"),
            p + "mlp.gate_proj.weight": ((ffn, h), "normal"), p + "mlp.up_proj.weight": ((ffn, h), "normal"),
            p + "mlp.down_proj.weight": ((h, ffn), "normal"),
            p + "input_layernorm.weight": ((h,), "ones"), p + "post_attention_layernorm.weight": ((h,), "ones"),
        })
    return tensors


def _write_weights(path: Path, shape: Qwen2Shape, seed: int) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    tensors = {name: (rng.standard_normal(dims) * 0.02).astype(np.float16) if init == "normal"
               else np.ones(dims, np.float16) for name, (dims, init) in tensor_shapes(shape).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})
