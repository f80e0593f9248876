"""The tokenizer served with random weights (gpubench/servers/full_vocab_tokenizer.py), loaded as vLLM loads it
(transformers' AutoTokenizer, which rebuilds any qwen2 model's pipeline as Qwen2Tokenizer)."""

import json
import random

import pytest
from tokenizers.decoders import DecodeStream

from gpubench.servers import full_vocab_tokenizer
from gpubench.servers.tiny_model import QWEN25_7B, SPECIAL_TOKENS, TINY, write_qwen2


@pytest.fixture(scope="module")
def study_folder(tmp_path_factory):
    return write_qwen2(tmp_path_factory.mktemp("qwen") / "model", QWEN25_7B, weights=False)


@pytest.fixture(scope="module")
def tokenizer(study_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(study_folder))


def test_the_tokenizer_has_exactly_the_models_vocabulary(study_folder, tokenizer):
    config = json.loads((study_folder / "config.json").read_text())
    assert len(tokenizer) == config["vocab_size"] == 152064
    assert tokenizer.convert_ids_to_tokens(config["eos_token_id"]) == "<|im_end|>"
    assert tokenizer.convert_ids_to_tokens(config["bos_token_id"]) == "<|endoftext|>"
    merges = json.loads((study_folder / "tokenizer.json").read_text())["model"]["merges"]
    assert len(merges) > 150_000  # of the order of Qwen2.5's 151,387
    assert TINY.vocab_size == QWEN25_7B.vocab_size  # the smoke serves the same tokenizer


def test_every_id_decodes_incrementally_to_text_of_its_own(tokenizer):
    """As vLLM's FastIncrementalDetokenizer streams: DecodeStream, special tokens skipped, primed with a prompt."""
    ids = list(range(len(tokenizer)))
    random.Random(0).shuffle(ids)
    stream = DecodeStream(ids=tokenizer.encode("A prompt to start from.", add_special_tokens=False),
                          skip_special_tokens=True)
    silent = [i for i in ids if not stream.step(tokenizer._tokenizer, i)]
    assert silent == []


def test_chat_template_and_special_tokens_encode_as_single_tokens(tokenizer):
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "how many apples"}], tokenize=True,
                                        add_generation_prompt=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    specials = [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS]
    assert ids[0] == specials[1] and ids.count(specials[2]) == 2  # <|im_start|>, two <|im_end|>
    assert tokenizer.all_special_ids == []  # nothing for skip_special_tokens to drop from a stream


def test_generated_words_encode_to_themselves_and_english_is_not_spelled_out(tokenizer):
    vocab = tokenizer._tokenizer.get_vocab()
    sample = random.Random(1).sample(range(128, len(tokenizer) - len(SPECIAL_TOKENS)), 2000)
    inverse = {i: t for t, i in vocab.items()}
    words = [i for i in sample if inverse[i][0] in "Ġ" and inverse[i][1:].isalpha()]  # a space, then letters
    same = sum(tokenizer.encode(tokenizer.decode([i]), add_special_tokens=False) == [i] for i in words)
    assert same >= 0.99 * len(words) and len(words) > 500
    text = "People of the world: each family has a story, a book and water at home."  # Qwen: 19 tokens
    assert len(tokenizer.encode(text, add_special_tokens=False)) <= 22


def test_built_from_its_parameters_alone_and_cached(tmp_path, monkeypatch):
    first = full_vocab_tokenizer.build(3000, SPECIAL_TOKENS, seed=0).to_str()
    assert full_vocab_tokenizer.build(3000, SPECIAL_TOKENS, seed=0).to_str() == first
    assert full_vocab_tokenizer.build(3000, SPECIAL_TOKENS, seed=1).to_str() != first
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert full_vocab_tokenizer.cached_json(3000, SPECIAL_TOKENS) == first
    [cached] = (tmp_path / "gpubench" / "tokenizers").iterdir()
    cached.write_text(first.replace("Ġtime", "Ġtimx"))
    assert "Ġtimx" in full_vocab_tokenizer.cached_json(3000, SPECIAL_TOKENS)  # read back, not rebuilt
    assert full_vocab_tokenizer.cached_json(3001, SPECIAL_TOKENS) != first  # another size, another file


def test_too_small_a_vocabulary_is_refused():
    with pytest.raises(ValueError, match="no room for the 128 ASCII bytes"):
        full_vocab_tokenizer.build(130, SPECIAL_TOKENS)
