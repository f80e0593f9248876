"""A Qwen2 model folder a server can load without a model hub: config, a locally built tokenizer, weights.

Two uses: a tiny random-weight checkpoint for the CPU tests and `--smoke` runs (seconds to build),
and `--weights random` at the study's shape, where only config + tokenizer are written and the
server makes random weights itself (vLLM's `--load-format dummy`: same compute, no 15 GB file).
The tokenizer is a byte-level BPE (as Qwen's), so any text encodes; it is trained here on a fixed
synthetic corpus, with Qwen's special tokens and its ChatML chat template.
"""

from __future__ import annotations

import json
import random
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
TINY = Qwen2Shape(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, vocab_size=1024, max_position_embeddings=8192)


def write_qwen2(folder: str | Path, shape: Qwen2Shape = TINY, weights: bool = True, seed: int = 0) -> Path:
    """Write a loadable Qwen2 folder; `weights=False` leaves the weights to the server (dummy load)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer_size = _write_tokenizer(folder, min(shape.vocab_size, 1024))
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", **asdict(shape),
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": False,
        "use_sliding_window": False, "sliding_window": None, "max_window_layers": shape.num_hidden_layers,
        "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
        "bos_token_id": _special_id("<|endoftext|>", tokenizer_size), "eos_token_id": _special_id("<|im_end|>",
                                                                                                    tokenizer_size),
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": config["bos_token_id"], "eos_token_id": [config["eos_token_id"]], "do_sample": False}))
    if weights:
        _write_weights(folder / "model.safetensors", shape, seed)
    return folder


def _special_id(token: str, tokenizer_size: int) -> int:
    # Special tokens are added after training, so they take the last ids, in SPECIAL_TOKENS order.
    return tokenizer_size - len(SPECIAL_TOKENS) + SPECIAL_TOKENS.index(token)


def _corpus(seed: int = 0, sentences: int = 3000) -> list[str]:
    """Deterministic English-like text: enough merges for a realistic tokens-per-word ratio."""
    rng = random.Random(seed)
    syllables = ["an", "be", "co", "de", "en", "fi", "ga", "he", "in", "jo", "ka", "le", "mo", "ne", "or", "pa",
                 "qu", "re", "si", "th", "un", "ve", "wa", "xe", "yo", "ze", "st", "ing", "tion", "er"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(600)]
    words += ["the", "a", "of", "to", "and", "is", "in", "that", "for", "it", "how", "what", "many", "each"]
    lines = []
    for _ in range(sentences):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 15)))
        lines.append(f"{text.capitalize()} {rng.randint(0, 999)}{rng.choice('.?!,')}")
    return lines


def _write_tokenizer(folder: Path, vocab_size: int) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
        "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
        "model_max_length": 131072, "clean_up_tokenization_spaces": False, "add_bos_token": False,
    }, indent=2))
    return tokenizer.get_vocab_size()


def _write_weights(path: Path, shape: Qwen2Shape, seed: int) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    head_dim = shape.hidden_size // shape.num_attention_heads
    kv = shape.num_key_value_heads * head_dim
    h, ffn = shape.hidden_size, shape.intermediate_size

    def normal(*dims):
        return (rng.standard_normal(dims) * 0.02).astype(np.float16)

    tensors = {"model.embed_tokens.weight": normal(shape.vocab_size, h), "lm_head.weight": normal(shape.vocab_size, h),
               "model.norm.weight": np.ones(h, np.float16)}
    for i in range(shape.num_hidden_layers):
        p = f"model.layers.{i}."
        tensors.update({
            p + "self_attn.q_proj.weight": normal(h, h), p + "self_attn.q_proj.bias": normal(h),
            p + "self_attn.k_proj.weight": normal(kv, h), p + "self_attn.k_proj.bias": normal(kv),
            p + "self_attn.v_proj.weight": normal(kv, h), p + "self_attn.v_proj.bias": normal(kv),
            p + "self_attn.o_proj.weight": normal(h, h),
            p + "mlp.gate_proj.weight": normal(ffn, h), p + "mlp.up_proj.weight": normal(ffn, h),
            p + "mlp.down_proj.weight": normal(h, ffn),
            p + "input_layernorm.weight": np.ones(h, np.float16),
            p + "post_attention_layernorm.weight": np.ones(h, np.float16),
        })
    save_file(tensors, str(path), metadata={"format": "pt"})
