"""A chunk that names several tokens (vLLM's return_token_ids, when its API server merges tokens behind a busy
engine) counts as that many arrived; gaps between chunks stay the inter-token latencies."""

import json

from gpubench.loadgen.client import RawResponse, parse, payload
from gpubench.loadgen.prompts import Prompt
from gpubench.loadgen.spec import LoadSpec


def sse(*events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def response(*events) -> RawResponse:
    body = sse(*events)
    raw = RawResponse(index=0, start=10.0, prompt_tokens_sent=4)
    cut = [0, *(i + 2 for i in range(len(body)) if body[i:i + 2] == b"\n\n")]
    for n, (a, b) in enumerate(zip(cut, cut[1:], strict=False)):  # one read per event, 10 ms apart
        raw.reads.append(body[a:b])
        raw.times.append(10.0 + 0.01 * (n + 1))
    return raw


def test_merged_chunks_count_every_token_they_name():
    raw = response({"choices": [{"text": " a", "token_ids": [5]}]},
                   {"choices": [{"text": " b c d", "token_ids": [6, 7, 8]}]},
                   {"choices": [{"text": "", "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 4, "completion_tokens": 4}})
    record = parse(raw)
    assert record.ok and record.usage_mismatch is None
    assert (record.tokens_received, record.chunks, record.completion_tokens) == (4, 2, 4)
    assert [round(gap, 6) for gap in record.itl_s] == [0.01]


def test_without_ids_a_merged_chunk_is_one_token_and_the_mismatch_is_named():
    raw = response({"choices": [{"text": " a"}]}, {"choices": [{"text": " b c d"}]},
                   {"choices": [{"text": "", "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 4, "completion_tokens": 4}})
    record = parse(raw)
    assert record.tokens_received == 2
    assert record.usage_mismatch == "server counted 4 completion tokens, 2 arrived"


def test_the_request_asks_for_token_ids_only_when_the_spec_does():
    spec = LoadSpec(base_url="http://127.0.0.1:1", model="m")
    prompt = Prompt(body=[1, 2, 3], tokens=3)
    assert "return_token_ids" not in json.loads(payload(spec, prompt))
    spec.token_ids = True
    assert json.loads(payload(spec, prompt))["return_token_ids"] is True
