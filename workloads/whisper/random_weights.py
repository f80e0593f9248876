"""Whisper with random weights at the real checkpoints' shapes (for --weights random), for transformers and,
converted by CTranslate2's own converter, for faster-whisper.

The shapes, special-token layout and generation settings of openai/whisper-large-v3 and -large-v3-turbo (and
of Whisper tiny, for CPU runs) are written here as data, so no Hub file is needed. The tokenizer is a
placeholder with the real vocabulary size and the real special tokens at their real ids; its text
tokens are meaningless names. With random weights the decoder almost never emits end-of-text, so the
caller fixes the number of tokens decoded per 30 s window (min = max new tokens) to keep the decoder's
work close to real speech.

The output embedding rows of the special and timestamp tokens (every id from end-of-text on; tied to the input
embeddings, as in Whisper) are scaled down (SPECIAL_ROW_SCALE): their logits sit near 0 while the best text
tokens' are a few units above it, so the random decoder never picks one, as a trained one does not mid-sentence.
Decoding then needs no suppression beyond the real runs' default list. Suppressing the 1,600 ids instead costs
CTranslate2's CUDA decoder host time a real run never pays: its DisableTokens keeps a sorted vector with one
insert per (row, id), quadratic in rows x ids, 288 ms per step at batch 16 x beam 5 against 0.5 ms for the
~90 ids of the default list (tools/ctranslate2_disable_tokens.cc measures it).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

N_TIMESTAMPS = 1501  # <|0.00|> ... <|30.00|>
SPECIAL_ROW_SCALE = 1e-3  # not 0: int8 quantization scales each row by its largest value
FORMAT = 2  # part of the converted model's cache key: bump when the checkpoint changes (2: SPECIAL_ROW_SCALE)

SHAPES = {  # openai/whisper-<size> config.json
    "large-v3": {"d_model": 1280, "layers": 32, "heads": 20, "ffn": 5120, "num_mel_bins": 128,
                 "vocab_size": 51866, "languages": 100},
    # large-v3's encoder with 4 decoder layers (openai/whisper-large-v3-turbo)
    "large-v3-turbo": {"d_model": 1280, "layers": 32, "decoder_layers": 4, "heads": 20, "ffn": 5120,
                       "num_mel_bins": 128, "vocab_size": 51866, "languages": 100},
    "tiny": {"d_model": 384, "layers": 4, "heads": 6, "ffn": 1536, "num_mel_bins": 80,
             "vocab_size": 51865, "languages": 99},
}


def language_tokens(size: str) -> list[str]:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    return [f"<|{code}|>" for code in list(LANGUAGES)[:SHAPES[size]["languages"]]]


def special_tokens(size: str) -> list[str]:
    """The special tokens in id order, right after the text tokens (multilingual checkpoints' layout)."""
    return ["<|endoftext|>", "<|startoftranscript|>", *language_tokens(size), "<|translate|>", "<|transcribe|>",
            "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]


def token_ids(size: str) -> dict[str, int]:
    specials = special_tokens(size)
    first = SHAPES[size]["vocab_size"] - N_TIMESTAMPS - len(specials)
    return {token: first + i for i, token in enumerate(specials)}


def build_model(size: str):
    """WhisperForConditionalGeneration with random weights, in torch's default dtype and on its default device."""
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration

    shape, ids = SHAPES[size], token_ids(size)
    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    config = WhisperConfig(
        vocab_size=shape["vocab_size"], num_mel_bins=shape["num_mel_bins"], d_model=shape["d_model"],
        encoder_layers=shape["layers"], decoder_layers=shape.get("decoder_layers", shape["layers"]),
        encoder_attention_heads=shape["heads"], decoder_attention_heads=shape["heads"],
        encoder_ffn_dim=shape["ffn"], decoder_ffn_dim=shape["ffn"],
        max_source_positions=1500, max_target_positions=448, pad_token_id=eot - 1, bos_token_id=eot,
        eos_token_id=eot, decoder_start_token_id=sot, begin_suppress_tokens=[220, eot],
        attn_implementation="sdpa",
    )
    model = WhisperForConditionalGeneration(config)
    import torch

    with torch.no_grad():  # proj_out is tied to these rows (module docstring)
        model.get_decoder().embed_tokens.weight[eot:] *= SPECIAL_ROW_SCALE
    model.generation_config = GenerationConfig(
        decoder_start_token_id=sot, bos_token_id=eot, eos_token_id=eot, pad_token_id=eot - 1, max_length=448,
        begin_suppress_tokens=[220, eot], is_multilingual=True,
        lang_to_id={token: ids[token] for token in language_tokens(size)},
        task_to_id={"translate": ids["<|translate|>"], "transcribe": ids["<|transcribe|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"], prev_sot_token_id=ids["<|startofprev|>"],
        max_initial_timestamp_index=50,
    )
    return model


def write_tokenizer(size: str, folder: Path):
    """A placeholder WhisperTokenizer in `folder`: real size and special ids, made-up text tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import WhisperTokenizerFast

    ids = token_ids(size)
    n_text = min(ids.values())
    vocab = {f"w{i}": i for i in range(n_text)}
    vocab.update(ids)
    first_timestamp = max(ids.values()) + 1
    vocab.update({f"<|{i * 0.02:.2f}|>": first_timestamp + i for i in range(N_TIMESTAMPS)})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens(list(ids))
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "WhisperTokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "model_max_length": 1024,
    }))
    loaded = WhisperTokenizerFast.from_pretrained(str(folder))
    # Whisper's tokenizers list every special token; the pipeline's timestamp handling relies on it.
    loaded.add_special_tokens({"additional_special_tokens": list(ids)[1:]})
    return loaded


def ctranslate2_model(size: str, seed: int, cache: Path | None = None) -> Path:
    """A CTranslate2 model folder converted by CTranslate2's own converter from the random-weight checkpoint at
    `size`'s shapes, with the placeholder tokenizer and the feature extractor's settings (128 mel bins for
    large-v3) that faster-whisper reads beside it. Weights in float16, as the Hub's faster-whisper models store
    them, so loading converts what a real model's load converts. Made once per (size, seed, CTranslate2
    version) on the CPU and kept under `cache` (default $XDG_CACHE_HOME/gpubench/whisper-ct2)."""
    import ctranslate2

    root = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpubench" / "whisper-ct2"
    folder = root / f"{size}-seed{seed}-v{FORMAT}-ctranslate2-{ctranslate2.__version__}"
    if (folder / "model.bin").is_file():
        return folder
    import torch
    from transformers import WhisperFeatureExtractor

    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{folder.name}-", dir=root) as scratch:
        checkpoint = Path(scratch) / "transformers"
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = build_model(size).half()  # initialised in float32 (fast on a CPU), stored as float16
        model.generation_config.suppress_tokens = []  # the converter copies it into the model's config
        model.save_pretrained(checkpoint)
        del model
        write_tokenizer(size, checkpoint)
        WhisperFeatureExtractor(feature_size=SHAPES[size]["num_mel_bins"]).to_json_file(
            checkpoint / "preprocessor_config.json")
        converted = Path(scratch) / "ctranslate2"
        ctranslate2.converters.TransformersConverter(
            str(checkpoint), copy_files=["tokenizer.json", "preprocessor_config.json"]).convert(
            str(converted), quantization="float16")
        os.replace(converted, folder)  # whole or not at all: another run never sees half a model
    return folder
