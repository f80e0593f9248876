"""The fine-tuning study's data: alpaca-format records to padded micro-batches with answer-only labels.

Records are dicts with `instruction`, `input` and `output` (yahma/alpaca-cleaned's own format). They
are shuffled with a fixed seed the way `datasets.Dataset.shuffle(seed)` does it (a numpy Generator
permutation), split into the training examples and the held-out ones that follow, and rendered with
the model's chat template: the user turn is the instruction (and the input after a blank line), the
assistant turn is the output. The label of every prompt token is -100, so the loss is on the answer
tokens only (the answer and the template's end-of-turn tokens); each example is cut at `max_len`.

Without the real data set (random weights) `synthetic_records` writes an alpaca-format set whose
lengths follow a model of alpaca-cleaned under Qwen2.5's chat template (LENGTHS below), and
`byte_tokenizer` stands in for Qwen's tokenizer: one token per byte, so a synthetic text of n
characters is n tokens, and every record still goes through the template, the masking and the
padding. The token ids differ from Qwen's; the lengths, and so the compute, are the study's.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IGNORE = -100

# A model of yahma/alpaca-cleaned's token counts under Qwen2.5's chat template (its default system
# prompt and turn markers are 28 prompt tokens, the answer's end of turn 2). The data set is not on
# this machine; the answer median is calibrated so that the mean example, cut at 512 tokens, has the
# post's 753,486 / 4,000 = 188.4 tokens (3% of the examples reach the cut).
LENGTHS = {
    "prompt_overhead": 28, "answer_overhead": 2,
    "instruction_median": 14, "instruction_sigma": 0.45,
    "input_share": 0.4, "input_median": 16, "input_sigma": 0.9,
    "answer_median": 100.8, "answer_sigma": 0.8,
}

# ChatML, the turn format of Qwen2.5 (and SmolLM2), for the byte tokenizer.
CHATML = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]


class DataError(ValueError):
    """A data file that is not alpaca-format JSON; str() is one line."""


def load_records(path: str | Path) -> list[dict[str, str]]:
    """An alpaca-format file (a JSON list, or JSON Lines), or the one such file in a data set folder."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
        if len(files) != 1:
            raise DataError(f"{path}: expected one .json or .jsonl file of records, found {len(files)}")
        path = files[0]
    text = path.read_text(encoding="utf-8")
    try:
        records = json.loads(text) if text.lstrip().startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON or JSON Lines ({exc.msg} at line {exc.lineno})") from None
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("instruction"), str) \
                or not isinstance(record.get("output"), str):
            raise DataError(f"{path}: record {i} is not alpaca-format (instruction, input, output strings)")
    return records


def shuffle_split(records: list[dict], seed: int, n_train: int, n_heldout: int) -> tuple[list[dict], list[dict]]:
    """The first `n_train` records after a seeded shuffle, and the `n_heldout` after them."""
    import numpy as np

    if n_train + n_heldout > len(records):
        raise DataError(f"the data has {len(records)} records; {n_train} training + {n_heldout} held out needed")
    order = np.random.default_rng(seed).permutation(len(records))
    shuffled = [records[int(i)] for i in order]
    return shuffled[:n_train], shuffled[n_train:n_train + n_heldout]


def messages(record: dict[str, str]) -> list[dict[str, str]]:
    user = record["instruction"]
    if record.get("input"):
        user += "\n\n" + record["input"]
    return [{"role": "user", "content": user}, {"role": "assistant", "content": record["output"]}]


def tokenize(records: list[dict[str, str]], tokenizer: Any, max_len: int) -> list[Example]:
    """Chat-template token ids, labels masked (-100) on the prompt, cut at `max_len`."""
    examples = []
    for record in records:
        turns = messages(record)
        prompt = tokenizer.apply_chat_template(turns[:1], tokenize=False, add_generation_prompt=True)
        full = tokenizer.apply_chat_template(turns, tokenize=False)
        if not full.startswith(prompt):
            raise DataError("the chat template does not render the prompt as a prefix of the conversation")
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(full[len(prompt):], add_special_tokens=False)["input_ids"]
        ids = (prompt_ids + answer_ids)[:max_len]
        labels = ([IGNORE] * len(prompt_ids) + answer_ids)[:max_len]
        examples.append(Example(ids, labels))
    return examples


def micro_batches(examples: list[Example], size: int, pad_id: int):
    """Consecutive micro-batches, each right-padded to its own longest example (as the study's loop)."""
    import torch

    for start in range(0, len(examples), size):
        chunk = examples[start:start + size]
        width = max(len(e.input_ids) for e in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        labels = torch.full((len(chunk), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, example in enumerate(chunk):
            n = len(example.input_ids)
            ids[row, :n] = torch.tensor(example.input_ids)
            labels[row, :n] = torch.tensor(example.labels)
            mask[row, :n] = 1
        yield {"input_ids": ids, "attention_mask": mask, "labels": labels}


def byte_tokenizer():
    """A tokenizer of 256 byte tokens and ChatML's three specials, with the ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(_byte_symbols())}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>"])
    tokenizer.chat_template = CHATML
    return tokenizer


def _byte_symbols() -> list[str]:
    """GPT-2's printable stand-in for each byte, the alphabet of a byte-level BPE vocabulary."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def synthetic_records(n: int, seed: int, tokenizer: Any) -> list[dict[str, str]]:
    """`n` alpaca-format records of random letters whose lengths under `tokenizer` (one token per byte)
    are drawn from LENGTHS: the same prompt and answer token counts Qwen's tokenizer would give."""
    rng = random.Random(seed)
    spec = LENGTHS
    blank = [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]

    def n_tokens(turns: list[dict], generation_prompt: bool) -> int:
        text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=generation_prompt)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    prompt_overhead, full_overhead = n_tokens(blank[:1], True), n_tokens(blank, False)

    def draw(median: float, sigma: float, least: int) -> int:
        return max(least, round(math.exp(math.log(median) + sigma * rng.gauss(0.0, 1.0))))

    def text(length: int) -> str:
        return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz      ", k=length))

    records = []
    for _ in range(n):
        instruction = draw(spec["instruction_median"], spec["instruction_sigma"], 3)
        has_input = rng.random() < spec["input_share"]
        input_len = draw(spec["input_median"], spec["input_sigma"], 1) if has_input else 0
        answer = draw(spec["answer_median"], spec["answer_sigma"], 1)
        # Qwen: 28 template tokens + instruction (+ 1 separator + input); here the separator is "\n\n".
        prompt_total = spec["prompt_overhead"] + instruction + (input_len + 1 if has_input else 0)
        instruction_chars = max(1, prompt_total - prompt_overhead - (input_len + 2 if has_input else 0))
        answer_chars = answer + spec["answer_overhead"] - (full_overhead - prompt_overhead)
        records.append({"instruction": text(instruction_chars), "input": text(input_len),
                        "output": text(answer_chars)})
    return records
