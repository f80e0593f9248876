"""Prompts of an exact length: random tokens, an optional shared prefix, or fixed text.

With a tokenizer, random tokens are decoded and the text is adjusted until it encodes back to exactly the asked
length, as `vllm bench serve`'s random data set does: the server tokenizes it, the work a real client's text makes
it do (a chat template then adds its own tokens, which the server's usage reports). /v1/completions without a
tokenizer, or with `prompt_ids`, gets token-id lists instead (vLLM, SGLang and TGI's OpenAI layer accept
`prompt: [ids]`): exactly prefix_tokens + input_tokens tokens, and no tokenizing on either side. A chat message
without a tokenizer is random common words, of approximate length (`Prompt.tokens` is None).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gpubench.loadgen.spec import LoadSpec

FIRST_RANDOM_ID = 256  # below this, many vocabularies keep special and byte-fallback tokens
_COMMON_WORDS = (
    "time year people way day man thing woman life child world school state family student group country"
    " problem hand part place case week company system program question work government number night point"
    " home water room mother area money story fact month lot right study book eye job word business issue"
    " side kind head house service friend father power hour game line end member law car city community"
    " name president team minute idea kid body information back parent face others level office door health"
    " person art war history party result change morning reason research girl guy moment air teacher force"
)
WORDS = _COMMON_WORDS.split()


@dataclass(frozen=True)
class Prompt:
    body: str | list[int]
    tokens: int | None  # the exact length in tokens, when known

    def as_text(self) -> str:
        if isinstance(self.body, str):
            return self.body
        raise TypeError("a chat message needs text: give a tokenizer, or use the completions endpoint")


def build(spec: LoadSpec, count: int, stream: str = "timed") -> list[Prompt]:
    """`count` prompts for the spec; `stream` separates warm-up prompts from timed ones (same shape,
    same shared prefix, other unique tokens)."""
    if spec.prompts:
        return [Prompt(spec.prompts[i % len(spec.prompts)], None) for i in range(count)]
    rng = random.Random(f"{spec.seed}-{stream}")
    prefix_rng = random.Random(f"{spec.seed}-prefix")  # the same prefix for warm-up and timed prompts
    tokenizer = _load_tokenizer(spec.tokenizer) if spec.tokenizer else None
    ids = _allowed_ids(tokenizer, spec.vocab_size)
    prefix = [prefix_rng.choice(ids) for _ in range(spec.prefix_tokens)]
    if sent_as(spec) == "token ids":
        return [Prompt(prefix + [rng.choice(ids) for _ in range(spec.input_tokens)], len(prefix) + spec.input_tokens)
                for _ in range(count)]
    if tokenizer is None:
        prefix_text = " ".join(prefix_rng.choice(WORDS) for _ in range(spec.prefix_tokens))
        return [Prompt(" ".join(filter(None, [prefix_text, *(rng.choice(WORDS) for _ in range(spec.input_tokens))])),
                       None) for _ in range(count)]
    return _exact_texts(tokenizer, prefix, spec.prefix_tokens + spec.input_tokens, ids, rng, count)


def sent_as(spec: LoadSpec) -> str:
    """How the spec's prompts reach the server: "text" (the server tokenizes) or "token ids"."""
    if spec.endpoint == "completions" and not spec.prompts and (spec.tokenizer is None or spec.prompt_ids):
        return "token ids"
    return "text"


def _load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _allowed_ids(tokenizer, vocab_size: int) -> list[int]:
    if tokenizer is None:
        return list(range(FIRST_RANDOM_ID, vocab_size))
    special = set(tokenizer.all_special_ids)  # and the added tokens above the base vocabulary (Qwen's <|...|>)
    return [i for i in range(tokenizer.vocab_size) if i not in special]


def _exact_texts(tokenizer, prefix: list[int], target: int, ids: list[int], rng: random.Random,
                 count: int) -> list[Prompt]:
    """`count` texts that each encode to `target` tokens, the way vLLM's random data set makes one: decoding then
    encoding random ids can merge or split tokens, so the encoded sequence is cut or grown at its end and decoded
    again. A byte-level tokenizer decodes its own encoding back to the same text, so the shared prefix's text stays
    the same. Every round decodes and encodes all the prompts still off by one batch call, which a fast tokenizer
    spreads over the cores (5,632 prompts of 512 tokens took a minute one by one on the H200 machine)."""
    sequences = [prefix + [rng.choice(ids) for _ in range(target - len(prefix))] for _ in range(count)]
    built: list[Prompt | None] = [None] * count
    pending = list(range(count))
    for _ in range(10):
        if not pending:  # all exact (or none asked: no warm-up)
            break
        texts = tokenizer.batch_decode([sequences[i] for i in pending])
        encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
        still = []
        for i, text, sequence in zip(pending, texts, encoded, strict=True):
            if len(sequence) == target:
                built[i] = Prompt(text, target)
                continue
            if len(sequence) > target:
                sequence = sequence[:target]
            else:
                sequence += [rng.choice(ids) for _ in range(target - len(sequence))]
            sequences[i], built[i] = sequence, Prompt(text, None)  # the last try, should none come out exact
            still.append(i)
        pending = still
    return built  # type: ignore[return-value] - every index was filled
