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


def stream(server, max_tokens: int, seed: int) -> list[dict]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Explain caches to a new engineer."}],
            "max_tokens": max_tokens, "temperature": 1.0, "seed": seed, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "logprobs": True}
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        lines = [line.decode()[5:].strip() for line in response if line.startswith(b"data:")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


@pytest.mark.parametrize("max_tokens", [64, 150])
def test_every_counted_token_arrives_in_a_chunk_of_its_own(tiny_llamacpp, max_tokens):
    chunks = stream(tiny_llamacpp.running(), max_tokens, seed=max_tokens)
    carrying = [c["choices"][0] for c in chunks if c["choices"] and (c["choices"][0].get("delta") or {}).get("content")]
    per_chunk = [len((c.get("logprobs") or {}).get("content") or []) for c in carrying]
    assert per_chunk == [1] * len(carrying), per_chunk  # one token each
    assert all(c["delta"]["content"] == c["logprobs"]["content"][0]["token"] for c in carrying)
    assert len(carrying) == chunks[-1]["usage"]["completion_tokens"] == max_tokens


def test_a_load_counts_what_the_server_counts(tiny_llamacpp, tmp_path):
    server = tiny_llamacpp.running()
    session = common.Session("llamacpp", server, MODEL, tokenizer=str(tiny_llamacpp.gguf.model_folder),
                             facts=common.gguf_decode_facts(tiny_llamacpp.gguf.model_folder, server.startup_facts()))
    ctx = SetupContext(run_id="r", setup="s", repeat=1, smoke=True, weights="random", progress=lambda *a, **k: None)
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
