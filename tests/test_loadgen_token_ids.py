"""A chunk counts as the tokens it says it carries (vLLM's token ids, a running usage count, llama.cpp's timings),
else as one; ITL is per token (a chunk's gap spread over its tokens), the chunk gap is vLLM's benchmark's ITL, and a
usage mismatch is only a real disagreement between the server's count and what its chunks said."""

import json

import pytest

from gpubench.loadgen.client import RawResponse, parse, payload
from gpubench.loadgen.prompts import Prompt
from gpubench.loadgen.spec import LoadSpec
from gpubench.loadgen.token_counts import WAYS


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


def end(completion: int) -> dict:
    return {"choices": [{"text": "", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": completion}}


def test_merged_chunks_count_every_token_they_name_and_itl_is_per_token():
    record = parse(response({"choices": [{"text": " a", "token_ids": [5]}]},
                            {"choices": [{"text": " b c d", "token_ids": [6, 7, 8]}]}, end(4)))
    assert record.ok and record.usage_mismatch is None and record.counted_by == "token_ids"
    assert (record.tokens_received, record.chunks, record.completion_tokens) == (4, 2, 4)
    # the 10 ms before the 3-token chunk is 3 gaps of 3.33 ms (vLLM's benchmark would keep one of 10 ms: chunk gap)
    assert record.itl_s == pytest.approx([0.01 / 3] * 3)
    assert record.chunk_gaps_s == pytest.approx([0.01])
    assert record.tpot_s == pytest.approx(0.01 / 3)
    assert sum(record.itl_s) == pytest.approx(record.last_token_s - record.ttft_s)


def test_tokens_that_come_with_the_first_have_no_gap_and_the_itls_add_up_to_the_decode():
    record = parse(response({"choices": [{"text": " a b", "token_ids": [5, 6]}]},
                            {"choices": [{"text": " c", "token_ids": [7]}]},
                            {"choices": [{"text": " d e", "token_ids": [8, 9]}]}, end(5)))
    assert record.itl_s == pytest.approx([0.0, 0.01, 0.005, 0.005])
    assert len(record.itl_s) == record.tokens_received - 1
    assert sum(record.itl_s) == pytest.approx(record.last_token_s - record.ttft_s)


@pytest.mark.parametrize(("field", "way"), [("usage", "usage"), ("timings", "timings")])
def test_a_running_count_on_every_chunk_says_how_many_tokens_each_carries(field, way):
    def chunk(text: str, so_far: int) -> dict:
        count = {"usage": {"prompt_tokens": 4, "completion_tokens": so_far}} if field == "usage" else \
            {"timings": {"predicted_n": so_far}}
        return {"choices": [{"text": text}], **count}

    record = parse(response(chunk(" a", 1), chunk(" b c d", 4), chunk(" e", 5), end(5)), way)
    assert record.counted_by == way and record.tokens_received == 5 and record.usage_mismatch is None
    assert record.itl_s == pytest.approx([0.01 / 3] * 3 + [0.01])


def test_a_chunk_without_a_count_is_one_token_and_no_mismatch_is_claimed():
    record = parse(response({"choices": [{"text": " a"}]}, {"choices": [{"text": " b c d"}]}, end(4)))
    assert (record.tokens_received, record.counted_by) == (2, None)
    assert record.usage_mismatch is None  # the server cannot say: not a disagreement (LoadRun.info says so once)
    assert record.output_tokens == 4  # the server's count is the output


def test_a_server_whose_count_differs_from_what_its_chunks_named_is_a_mismatch():
    record = parse(response({"choices": [{"text": " a", "token_ids": [5]}]},
                            {"choices": [{"text": " b c", "token_ids": [6, 7]}]}, end(4)))
    assert record.usage_mismatch == "server counted 4 completion tokens, its chunks said 3"


def test_a_chunk_the_server_says_carried_a_token_counts_even_without_text():
    """vLLM's last chunk may carry the end-of-sequence token with no text: its ids say it is a token."""
    record = parse(response({"choices": [{"text": " a", "token_ids": [5]}]},
                            {"choices": [{"text": "", "token_ids": [2], "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 4, "completion_tokens": 2}}))
    assert (record.tokens_received, record.chunks, record.usage_mismatch) == (2, 2, None)


def test_the_request_asks_for_the_counting_way_it_is_given():
    spec = LoadSpec(base_url="http://127.0.0.1:1", model="m")
    prompt = Prompt(body=[1, 2, 3], tokens=3)
    assert "return_token_ids" not in json.loads(payload(spec, prompt))
    assert json.loads(payload(spec, prompt, WAYS["token_ids"]))["return_token_ids"] is True
    usage = json.loads(payload(spec, prompt, WAYS["usage"]))
    assert usage["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert json.loads(payload(spec, prompt, WAYS["timings"]))["timings_per_token"] is True
    assert LoadSpec(base_url="http://h:1", model="m", token_ids=True).count_tokens == "token_ids"


def test_a_token_llama_cpp_names_only_in_its_closing_usage_chunk_is_counted():
    # llama-server after an end-of-generation token (or a stop string): no text chunk for it, a finish chunk with no
    # timings, then the usage chunk with no choices, whose timings count it (seen on the H100, 2026-12-07: "server
    # counted 159 completion tokens, its chunks said 158")
    def token(text: str, so_far: int) -> dict:
        return {"choices": [{"delta": {"content": text}, "finish_reason": None}], "timings": {"predicted_n": so_far}}

    closing = {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 4}, "timings": {"predicted_n": 4}}
    record = parse(response(token(" a", 1), token(" b", 2), token(" c", 3),
                            {"choices": [{"delta": {}, "finish_reason": "stop"}]}, closing), "timings")
    assert record.ok and record.usage_mismatch is None and record.counted_by == "timings"
    assert (record.tokens_received, record.completion_tokens, record.text) == (4, 4, " a b c")
    assert record.itl_s == pytest.approx([0.01, 0.01, 0.02])  # the withheld token's step ends at the closing chunk
    # a closing chunk that counts nothing new adds no token
    same = dict(closing, usage={"prompt_tokens": 4, "completion_tokens": 3}, timings={"predicted_n": 3})
    record = parse(response(token(" a", 1), token(" b", 2), token(" c", 3), same), "timings")
    assert (record.tokens_received, record.chunks, record.usage_mismatch) == (3, 3, None)
