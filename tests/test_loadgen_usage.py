"""Token counts come from the server's usage, checked against the tokens its chunks said they carried."""

import streaming_server

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec


def run(url: str, endpoint: str = "completions", **overrides):
    values = {"base_url": url, "model": "m", "endpoint": endpoint, "users": 2, "requests": 4, "warmup": 0,
              "input_tokens": 8, "output_tokens": 6, "ignore_eos": True}
    return run_load(LoadSpec(**{**values, **overrides}))


def test_matching_usage_is_not_flagged_and_counts_come_from_the_server():
    with streaming_server.running(ttft_ms=5, token_ms=1) as url:
        for endpoint in ("completions", "chat"):  # chat: the role-only opening chunk is no token
            result = run(url, endpoint)
            assert result.metrics()["usage_mismatches"] == 0
            assert [(r.completion_tokens, r.tokens_received) for r in result.records] == [(6, 6)] * 4


def test_a_server_that_miscounts_is_flagged_and_its_count_is_used():
    """vLLM-like: its chunks name their tokens (return_token_ids, found by asking it), its usage says one more."""
    with streaming_server.running(ttft_ms=5, token_ms=1, usage_extra=1, flavor="vllm") as url:
        result = run(url)
    m = result.metrics()
    assert m["usage_mismatches"] == 4 and m["requests_ok"] == 4
    assert m["completion_tokens_mean"] == 7  # what the server says it generated
    assert result.info()["usage_mismatch_example"] == "server counted 7 completion tokens, its chunks said 6"


def test_no_usage_in_the_stream_is_said_once_and_the_counted_tokens_are_used():
    with streaming_server.running(ttft_ms=5, token_ms=1, no_usage=True) as url:
        result = run(url)
    assert result.metrics()["usage_mismatches"] == 0  # no count to disagree with
    assert result.metrics()["completion_tokens_mean"] == 6
    assert result.info()["token_counting"]["requests_without_usage"] == 4


def test_without_ignore_eos_the_server_may_stop_early():
    with streaming_server.running(ttft_ms=5, token_ms=1, eos_after=3) as url:
        stopped = run(url, ignore_eos=False)
        forced = run(url, ignore_eos=True)
    assert stopped.metrics()["completion_tokens_mean"] == 3
    assert forced.metrics()["completion_tokens_mean"] == 6
