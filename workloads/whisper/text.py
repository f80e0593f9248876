"""Word error rate the study's way: Whisper's English text normalizer on both sides, then corpus-level WER.

The normalizer is transformers' copy of Whisper's (`EnglishTextNormalizer`: lower case, contractions,
fillers, symbols, spelled-out numbers to digits, "$25", British to American spelling) with Whisper's
own British-to-American spelling list: english_spelling.json, openai/whisper's whisper/normalizers/english.json
(MIT licence; the Hub checkpoints ship it as normalizer.json), kept here as data so the word error rate is scored
the same way on every machine, whichever model files are present. WER is over the whole set: all errors / all
reference words.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

SPELLING = Path(__file__).with_name("english_spelling.json")


@functools.cache
def normalizer():
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    return EnglishTextNormalizer(json.loads(SPELLING.read_text(encoding="utf-8")))


def normalize(text: str) -> str:
    return normalizer()(text).strip()


def corpus_wer(references: list[str], hypotheses: list[str]) -> tuple[float, int]:
    """(WER as a fraction, reference words) over all pairs after normalization."""
    import jiwer

    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references for {len(hypotheses)} transcripts")
    pairs = [(normalize(ref), normalize(hyp)) for ref, hyp in zip(references, hypotheses, strict=True)]
    words = sum(len(ref.split()) for ref, _ in pairs)
    if words == 0:
        raise ValueError("the references are empty after normalization: no word error rate")
    # jiwer refuses empty strings; a transcript that is empty is all deletions, counted here by hand.
    scored = [(ref, hyp) for ref, hyp in pairs if ref and hyp]
    deletions = sum(len(ref.split()) for ref, hyp in pairs if ref and not hyp)
    insertions = sum(len(hyp.split()) for ref, hyp in pairs if hyp and not ref)
    errors = deletions + insertions
    if scored:
        out = jiwer.process_words([ref for ref, _ in scored], [hyp for _, hyp in scored])
        errors += out.substitutions + out.deletions + out.insertions
    return errors / words, words
