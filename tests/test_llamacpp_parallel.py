"""OLLAMA_NUM_PARALLEL=16 as llama-server's 16 slots: sixteen users are decoded together, not one after another."""

from __future__ import annotations

import pytest
from llamacpp_support import ABSENT, BUILT, MODEL

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def test_sixteen_users_stream_at_once_and_are_decoded_in_one_batch(tiny_llamacpp):
    server = tiny_llamacpp.running()
    spec = LoadSpec(base_url=server.base_url, model=MODEL, endpoint="chat", users=16, requests=32, warmup=0,
                    tokenizer=str(tiny_llamacpp.gguf.model_folder), input_tokens=32, output_tokens=48,
                    ignore_eos=True)
    before = server.counters()
    run = run_load(spec)
    after = server.counters()
    assert all(r.ok and r.completion_tokens == 48 for r in run.records)
    # the client's view: sixteen streams between their first and last tokens at the same time
    assert most_at_once([(r.sent + r.ttft_s, r.sent + r.last_token_s) for r in run.records]) == 16
    # the server's: the slots it decodes per llama_decode() call over these requests, where one user's are 1 per
    # call (a closed loop's users start their next request one by one, so it stays below 16: 7-15 measured)
    calls = after["decode_calls"] - before["decode_calls"]
    batch = (after["busy_slot_decodes"] - before["busy_slot_decodes"]) / calls
    assert batch > 4, f"{batch:.1f} slots per decode call over {calls:.0f} calls"
    assert calls < 32 * 48 / 4  # far fewer calls than tokens: they were batched
