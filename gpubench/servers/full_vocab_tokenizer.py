"""A byte-level BPE tokenizer with exactly a model's vocabulary size, every id decoding to text of its own.

Random weights sample every id of the model's vocabulary, so the tokenizer served with them must cover all
of them, and each id must decode, incrementally (vLLM's DecodeStream), to non-empty text: else a generated
token never arrives as streamed text and the client's count falls short of the server's.

What it is, so that prompts cost the server and the client what a real tokenizer would make them cost:
Qwen2's pipeline (NFC, its split regex, byte-level pre-tokenizer and decoder: what transformers rebuilds for
any `qwen2` model anyway), ASCII byte tokens, then merges up to the vocabulary size (Qwen2.5: ~151k), then
the special tokens. No training: word-like strings are generated from a seed, and each new one gets the
merges that join the pieces today's merges leave it in, so every generated word encodes to itself (a new
merge ranks after all earlier ones, which therefore keep their results). Built in seconds, cached on disk
by its parameters.

What keeps every id's text non-empty:
- every token is ASCII: no lone byte 0x80-0xFF (half a character, which DecodeStream holds back until the
  next token). The price: a non-ASCII character in a prompt encodes to nothing (BPE without an unknown
  token drops it), so text prompts are best kept ASCII; the random prompts are, being decoded ids;
- the special tokens are added as non-special, and the model folder names none as eos/pad/bos in its
  tokenizer config (tiny_model.py): `skip_special_tokens` (vLLM's default) would drop them, and a random
  model samples them as often as any other id. They still encode as one token each (ChatML), and the
  model's generation_config still stops at <|im_end|> when eos is not ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

FORMAT = 2  # part of the cache key: bump when the construction changes
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")
WHITESPACE = {" ": "Ġ", "\n": "Ċ"}  # the byte-level characters of a space and a newline
SYLLABLES = ("an", "be", "co", "de", "en", "fi", "ga", "he", "in", "jo", "ka", "le", "mo", "ne", "or", "pa", "qu", "re",
             "si", "th", "un", "ve", "wa", "xe", "yo", "ze", "st", "ing", "tion", "er", "al", "ou", "ch", "sh", "pr",
             "tr", "ck", "ly", "ment", "ness", "ab", "ic", "ist", "ous", "ble")
FUNCTION_WORDS = ("the", "of", "and", "to", "a", "in", "is", "it", "that", "for", "on", "with", "as", "at", "by",
                  "from", "this", "be", "are", "was", "has", "have", "each", "how", "many", "what", "which", "who",
                  "not", "or", "an", "if", "then", "so", "do", "does", "you", "we", "they", "he", "she", "his",
                  "her", "its", "our", "their")
PUNCTUATION = list(".,;:!?()[]{}<>\"'-_/\\|@#$%^&*+=~`")


def byte_alphabet() -> list[str]:
    """GPT-2's byte-to-character table (what the ByteLevel pre-tokenizer emits), in byte order: the ASCII
    bytes only (a lone byte 0x80-0xFF is half a character, which DecodeStream holds back)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(128)]


def _words(rng: random.Random):
    """Endless distinct word-like byte-level strings: common English words first, then made-up words with
    and without a leading space, capitalised, punctuation runs and whitespace runs, the kinds of pieces
    Qwen's pre-tokenizer makes."""
    from gpubench.loadgen.prompts import WORDS

    space, newline = WHITESPACE[" "], WHITESPACE["\n"]
    seen: set[str] = set()
    for word in [*FUNCTION_WORDS, *WORDS]:
        for form in (space + word, word, space + word.capitalize(), word.capitalize()):
            if form not in seen:
                seen.add(form)
                yield form
    while True:
        kind = rng.random()
        if kind < 0.02:
            word = rng.choice(["", space]) + "".join(rng.choice(PUNCTUATION) for _ in range(rng.randint(1, 3)))
        elif kind < 0.025:
            word = rng.choice([space, newline]) * rng.randint(2, 16)
        else:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
            if rng.random() < 0.2:
                word = word.capitalize()
            if rng.random() < 0.7:
                word = space + word
        if len(word) > 1 and word not in seen:
            seen.add(word)
            yield word


def _pieces(word: str, ranks: dict[tuple[str, str], int]) -> list[str]:
    """The word under today's merges: the lowest-ranked adjacent pair merged first, as tokenizers' BPE does."""
    parts = list(word)
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get((parts[i], parts[i + 1]))
            if rank is not None and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            break
        parts[at: at + 2] = [parts[at] + parts[at + 1]]
    return parts


def vocabulary(size: int, seed: int = 0) -> tuple[list[str], list[tuple[str, str]]]:
    """`size` distinct tokens (the 128 ASCII bytes first) and the merges that make them, in rank order."""
    alphabet = byte_alphabet()
    tokens, known = list(alphabet), set(alphabet)
    merges: list[tuple[str, str]] = []
    ranks: dict[tuple[str, str], int] = {}
    words = _words(random.Random(f"full-vocab-{seed}"))
    while len(tokens) < size:
        parts = _pieces(next(words), ranks)
        while len(parts) > 1 and len(tokens) < size:
            pair = (parts[0], parts[1])
            joined = parts[0] + parts[1]
            ranks[pair] = len(merges)
            merges.append(pair)
            if joined not in known:
                known.add(joined)
                tokens.append(joined)
            parts[:2] = [joined]
    return tokens, merges


def build(vocab_size: int, special_tokens: list[str], seed: int = 0):
    """The tokenizer (a `tokenizers.Tokenizer`): ids 0..vocab_size-1, the special tokens last."""
    if vocab_size - len(special_tokens) < 128:
        raise ValueError(f"a vocabulary of {vocab_size} tokens has no room for the 128 ASCII bytes and"
                         f" {len(special_tokens)} special tokens")
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tokens, merges = vocabulary(vocab_size - len(special_tokens), seed)
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in special_tokens])
    return tokenizer


def cached_json(vocab_size: int, special_tokens: list[str], seed: int = 0) -> str:
    """build()'s tokenizer.json text, from the cache when built before with the same parameters."""
    key = hashlib.sha256(json.dumps([FORMAT, vocab_size, special_tokens, seed]).encode()).hexdigest()[:16]
    path = cache_dir() / f"tokenizer-{key}.json"
    if path.exists():
        return path.read_text(encoding="utf-8")
    text = build(vocab_size, special_tokens, seed).to_str()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)  # atomic: a concurrent builder never reads half a file
    return text


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "gpubench" / "tokenizers"
