"""Random-weight serving on a real vLLM (the CPU build in .venv-vllm/): every token the server counts arrives as
streamed text, and load levels on one server do not share prompts.

The server the server tests share (tests/vllm_support.py): the smoke's tiny Qwen2 (Qwen2.5's 152,064-id
vocabulary, random weights) with the full-vocabulary tokenizer, prefix caching at vLLM's default (on). vLLM merges
several tokens into one chunk when its API server falls behind the engine (a busy host does that), so the
token-count check reads vLLM's per-chunk token ids (return_token_ids): a merged chunk is told apart from a token
without text.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from vllm_support import ABSENT, MODEL, VLLM_PYTHON

from gpubench.workload import SetupContext
from gpubench.workloads import serving_common as common

pytestmark = pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=ABSENT)
ENDPOINTS = {"completions": "completions", "chat": "chat/completions"}


@pytest.fixture
def session(tiny_vllm):
    server = tiny_vllm.running()
    facts = common.decode_facts(str(tiny_vllm.folder), "bfloat16", "", server.startup_facts())  # as vllm_session has
    return common.Session("vllm", server, MODEL, tokenizer=str(tiny_vllm.folder), facts=facts)


def stream(session, endpoint: str, content, max_tokens: int) -> list[dict]:
    """One streamed request with vLLM's return_token_ids: each chunk says which token ids it carries."""
    body = {"model": MODEL, "max_tokens": max_tokens, "temperature": 1.0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "return_token_ids": True, "seed": max_tokens}
    body.update({"messages": [{"role": "user", "content": content}]} if endpoint == "chat" else {"prompt": content})
    request = urllib.request.Request(f"{session.base_url}/{ENDPOINTS[endpoint]}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        lines = [line.decode()[5:].strip() for line in response if line.startswith(b"data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_every_counted_completion_token_arrives_as_streamed_text(session, endpoint):
    """Each chunk with token ids carries text, the ids add up to the server's count, and the text is theirs.
    (vLLM may put several tokens in one chunk when its API server falls behind the engine: a busy host's
    doing, which tokens_streamed_pct reports; what the tokenizer must never do is give a token no text.)"""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(session.tokenizer)
    prompt = tokenizer.decode(list(range(5000, 5048)))
    for max_tokens in (96, 160):
        chunks = stream(session, endpoint, prompt if endpoint == "chat" else list(range(5000, 5048)), max_tokens)
        carrying = [c["choices"][0] for c in chunks if c["choices"] and c["choices"][0].get("token_ids")]
        texts = [(c.get("delta") or {}).get("content") if endpoint == "chat" else c.get("text") for c in carrying]
        ids = [i for c in carrying for i in c["token_ids"]]
        assert all(texts), [c for c, t in zip(carrying, texts, strict=True) if not t][:3]
        assert len(ids) == chunks[-1]["usage"]["completion_tokens"] == max_tokens
        assert "".join(texts) == tokenizer.decode(ids)
        assert max(ids) - min(ids) > 50_000  # the random model samples the whole vocabulary


def context(setup: str) -> SetupContext:
    return SetupContext(run_id="t", setup=setup, repeat=0, smoke=True, weights="random", progress=lambda *a, **k: None)


def test_load_levels_on_one_server_send_fresh_prompts_to_an_emptied_cache(session):
    """c1 then c4 at one run seed, as vllm-serving runs them: c4 finds nothing of c1's in the prefix cache. c1 again
    (the same prompts, as a study of fixed prompts sends at every level) finds nothing either: the cache is emptied
    before each level. Sent again without that, the same prompts are found in it."""
    from gpubench.loadgen.run import run_load
    from gpubench.loadgen.spec import LoadSpec

    shape = dict(endpoint="completions", requests=4, warmup=1, input_tokens=260, output_tokens=4, ignore_eos=True)

    def level(name: str, users: int) -> tuple[dict, dict]:
        ctx = context(name)
        metrics = common.measure_load(session, ctx, level=name, seed=42, users=users, **shape)
        return metrics, ctx.info

    first, first_info = level("c1", 1)
    second, second_info = level("c4", 4)
    assert first["server_prompt_tokens"] == second["server_prompt_tokens"] == 4 * 260  # timed only
    assert second["prefix_cache_hit_rate"] < 5  # random prompts: no whole cache block in common
    assert first_info["prompt_seed"]["seed"] != second_info["prompt_seed"]["seed"]
    assert second_info["prompt_seed"]["from"] == "run seed 42, load level 'c4'"
    assert second_info["prompt_seed"]["server_cache"] == "vLLM's prefix cache emptied before the level's warm-up"
    again, _ = level("c1", 4)
    assert again["prefix_cache_hit_rate"] < 5  # c1's prompts again, into an emptied cache
    before = session.counters()
    run_load(LoadSpec(base_url=session.base_url, model=session.model, tokenizer=session.tokenizer, users=4,
                      seed=first_info["prompt_seed"]["seed"], **shape))
    after = session.counters()
    hits = after["prefix_cache_hits"] - before["prefix_cache_hits"]
    assert hits / (after["prefix_cache_queries"] - before["prefix_cache_queries"]) > 0.8  # no reset: found
    assert 0 < first["tokens_streamed_pct"] <= 100 and 0 < second["tokens_streamed_pct"] <= 100


def test_fixed_prompts_start_uncached_after_their_warm_up(session):
    """A study of fixed prompts (ollama-vs-vllm's 32) warms up with the very prompts it then times: the cache is
    emptied again after the warm-up, so the timed requests find none of it, as the study's one warm-up left them."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(session.tokenizer)
    fixed = tuple(tokenizer.decode(list(range(7000 + 400 * k, 7300 + 400 * k))) for k in range(4))
    ctx = context("u2")
    metrics = common.measure_load(session, ctx, level="u2", seed=0, endpoint="completions", users=2, requests=4,
                                  warmup=2, prompts=fixed, output_tokens=4, ignore_eos=True)
    assert metrics["prefix_cache_hit_rate"] < 5  # the warm-up's p0 and p1 are not found by the timed p0 and p1
    assert ctx.info["prompt_seed"]["server_cache"].endswith("again after it (fixed prompts: the warm-up had sent"
                                                            " the timed ones)")


def test_the_rate_search_setup_measures_the_found_rate_as_its_timed_load(session):
    """vllm-serving's rate-search on a real vLLM: a target no load meets (TTFT 1 ms) halves down from the start and
    says none met, with no timed load; a target every load meets (MLPerf Server on a tiny model, 4 requests) stops at
    the first load, and that rate, measured once more, is the result's timed load."""
    from gpubench.loadgen import slo

    shape = dict(endpoint="completions", requests=4, warmup=1, input_tokens=32, output_tokens=4, ignore_eos=True)
    phases = []

    def searched(target: slo.Target) -> tuple[dict, dict]:
        ctx = context("rate-search")
        ctx.progress = lambda phase, *args, **kwargs: phases.append(phase)
        metrics = common.search_rate(session, ctx, level="rate-search", seed=42, target=target, tolerance=0.5,
                                     max_probes=4, **shape)
        return metrics, ctx.info

    strict, info = searched(slo.Target(ttft_ms=1, tpot_ms=100))
    assert strict == {"slo_max_rate": 0.0, "slo_search_probes": 4.0}, info["search"]
    assert info["search"]["stopped"].startswith("stopped after 4 probes") and "load" not in info
    assert not any(row["met"] for row in info["search"]["probes"]) and "timed" not in phases
    loose, info = searched(slo.Target(ttft_ms=600_000, tpot_ms=600_000))
    assert info["search"]["stopped"].startswith("met with every request at once")
    assert loose["slo_max_rate"] == loose["requested_rate"]
    assert loose["slo_max_rate"] == pytest.approx(info["search"]["probes"][0]["requests_per_s"], abs=1e-3)
    assert loose["slo_met"] == 1 and loose["requests_ok"] == 4 and "server_prompt_tokens" in loose
    assert phases.count("timed") >= 1 and phases[-1] == "timed"  # the probes' timed parts are "probe"
