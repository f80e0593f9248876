"""Random-weight serving on a real llama-server: every token the server counts arrives as its own streamed chunk,
and the load generator's counts are the server's (counted by llama.cpp's timings_per_token, which the load
generator finds by asking the server).

llama-server streams one chunk per token and names no token ids in a chat chunk; asked for logprobs it does, one
entry per token, which is how this test tells a chunk of one token from a chunk of several. (A token ending in the
middle of a UTF-8 character would wait for the next one: the full-vocabulary tokenizer has only ASCII tokens.)
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from llamacpp_support import ABSENT, BUILT, MODEL

from gpubench.workload import SetupContext
from gpubench.workloads import serving_common as common

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)
PROMPT = "Explain caches to a new engineer."


def stream(server, max_tokens: int, seed: int, **fields) -> list[dict]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": max_tokens,
            "temperature": 1.0, "seed": seed, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "logprobs": True, **fields}
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        lines = [line.decode()[5:].strip() for line in response if line.startswith(b"data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def carrying(chunks: list[dict]) -> list[dict]:
    """The choices of the chunks that carry text."""
    return [c["choices"][0] for c in chunks if c["choices"] and (c["choices"][0].get("delta") or {}).get("content")]


def session_and_context(tiny_llamacpp) -> tuple[common.Session, SetupContext]:
    server = tiny_llamacpp.running()
    session = common.Session("llamacpp", server, MODEL, tokenizer=str(tiny_llamacpp.gguf.model_folder),
                             facts=common.gguf_decode_facts(tiny_llamacpp.gguf.model_folder, server.startup_facts()))
    ctx = SetupContext(run_id="r", setup="s", repeat=1, smoke=True, weights="random", progress=lambda *a, **k: None)
    return session, ctx


@pytest.mark.parametrize("max_tokens", [64, 150])
def test_every_counted_token_arrives_in_a_chunk_of_its_own(tiny_llamacpp, max_tokens):
    chunks = stream(tiny_llamacpp.running(), max_tokens, seed=max_tokens)
    texts = carrying(chunks)
    per_chunk = [len((c.get("logprobs") or {}).get("content") or []) for c in texts]
    assert per_chunk == [1] * len(texts), per_chunk  # one token each
    assert all(c["delta"]["content"] == c["logprobs"]["content"][0]["token"] for c in texts)
    assert len(texts) == chunks[-1]["usage"]["completion_tokens"] == max_tokens


def test_a_load_counts_what_the_server_counts(tiny_llamacpp, tmp_path):
    session, ctx = session_and_context(tiny_llamacpp)
    metrics = common.measure_load(session, ctx, level="u4", seed=0, endpoint="chat", users=4, requests=8,
                                  input_tokens=64, output_tokens=40, ignore_eos=True)
    assert metrics["requests_ok"] == 8 and metrics["usage_mismatches"] == 0
    assert metrics["tokens_streamed_pct"] == 100.0
    assert metrics["server_generation_tokens"] == 8 * 40 == metrics["completion_tokens_mean"] * 8
    assert metrics["server_prompt_tokens"] == metrics["prompt_tokens_mean"] * 8
    assert metrics["achieved_gbps"] > 0 and ctx.info["bandwidth"]["weights_from"].startswith("llama.cpp log")
    assert ctx.info["prompt_seed"]["server_cache"].startswith("llama.cpp's slots erased")
    counting = ctx.info["load"]["token_counting"]  # asked of the server by the load generator, not the session
    assert counting["way"] == "timings" and counting["server"] == "llamacpp", counting


def test_a_token_the_server_withholds_at_a_stop_string_is_counted_as_the_server_counts_it(tiny_llamacpp):
    # llama-server counts the token that completes a stop string (as it counts an end-of-generation token) but sends
    # no text for it: only the closing usage chunk's timings name it
    server = tiny_llamacpp.running()
    free = stream(server, 40, seed=7, temperature=0.0)
    # a token the greedy answer reaches (it may reach it earlier: the server stops at the first)
    stop = carrying(free)[20]["delta"]["content"]
    stopped = stream(server, 40, seed=7, temperature=0.0, stop=[stop])
    assert stopped[-2]["choices"][0]["finish_reason"] == "stop" and "timings" not in stopped[-2]
    sent = len(carrying(stopped))
    assert stopped[-1]["usage"]["completion_tokens"] == sent + 1 < 40  # one counted token with no text

    session, ctx = session_and_context(tiny_llamacpp)
    metrics = common.measure_load(session, ctx, level="u1", seed=0, endpoint="chat", users=1, requests=2,
                                  prompts=(PROMPT,), output_tokens=40, temperature=0.0,
                                  extra_body={"seed": 7, "stop": [stop]})
    assert metrics["requests_ok"] == 2 and metrics["usage_mismatches"] == 0, ctx.info["load"]
    assert metrics["tokens_streamed_pct"] == 100.0
    assert metrics["completion_tokens_mean"] == metrics["server_generation_tokens"] / 2 < 40  # stopped early
