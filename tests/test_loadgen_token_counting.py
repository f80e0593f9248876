"""Tokens counted, not chunks, by default: `gpubench loadgen` asks the server who it is and how it says a chunk's
tokens, once before the load, and records what it found; a server that cannot say is said once, not as a usage
mismatch on every request."""

import pytest
import streaming_server
from clirun import gpubench

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

LOAD = {"model": "m", "users": 4, "requests": 12, "warmup": 4, "input_tokens": 8, "output_tokens": 17,
        "ignore_eos": True}


def test_plain_loadgen_counts_every_token_of_a_vllm_that_merges_4_a_chunk(tmp_path):
    with streaming_server.running(ttft_ms=20, token_ms=5, tokens_per_chunk=4, flavor="vllm") as url:
        result = gpubench("loadgen", "--base-url", url, "--model", "m", "--users", "4", "--requests", "12",
                          "--input-tokens", "8", "--output-tokens", "17", "--ignore-eos", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    (res,) = [r for r in result.records() if r["kind"] == "result"]
    m = {k: v["value"] for k, v in res["metrics"].items()}
    counting = res["info"]["token_counting"]
    assert m["usage_mismatches"] == 0 and m["completion_tokens_mean"] == 17
    assert counting["way"] == "token_ids" and counting["server"] == "vllm 0.26.0"
    assert "probe" in counting["found"]
    assert counting["tokens_counted"] == counting["server_counted"] == 12 * 17  # every token, of every request
    assert "requests_counted_by_chunks" not in counting and "note" not in counting


@pytest.mark.parametrize(("flavor", "count_tokens", "way"), [("llamacpp", "auto", "timings"),
                                                             ("vllm", "usage", "usage")])
def test_each_way_of_saying_a_chunks_tokens_counts_them_all(flavor, count_tokens, way):
    with streaming_server.running(ttft_ms=20, token_ms=5, tokens_per_chunk=4, flavor=flavor) as url:
        run = run_load(LoadSpec(base_url=url, count_tokens=count_tokens, **LOAD))
    assert run.counting.way == way
    assert all(r.counted_by == way and r.tokens_received == r.completion_tokens == 17 for r in run.records)
    assert run.metrics()["usage_mismatches"] == 0


def test_a_server_that_cannot_say_is_said_once_not_as_a_mismatch_per_request():
    with streaming_server.running(ttft_ms=20, token_ms=5, tokens_per_chunk=4) as url:
        run = run_load(LoadSpec(base_url=url, **LOAD))
    counting = run.info()["token_counting"]
    assert counting["way"] == "chunks" and counting["server"] is None
    assert "did not say who it is" in counting["found"] and "a chunk counts as one token" in counting["note"]
    assert counting["requests_counted_by_chunks"] == 12
    assert run.metrics()["usage_mismatches"] == 0
    # 17 tokens as 1 + 4 + 4 + 4 + 4: five chunks arrived; the output count is the server's
    assert counting["tokens_counted"] == 12 * 5 and run.metrics()["completion_tokens_mean"] == 17


def test_itl_is_per_token_and_the_chunk_gap_is_between_chunks():
    """4 tokens a chunk, 20 ms a token: a chunk every 80 ms, so 20 ms per token and 80 ms between chunks, as the
    server's own clock says."""
    with streaming_server.running(ttft_ms=50, token_ms=20, tokens_per_chunk=4, flavor="vllm") as url:
        run = run_load(LoadSpec(base_url=url, **{**LOAD, "output_tokens": 13}))
        served = streaming_server.stats(url)
    m = run.metrics()
    assert served["tpot_ms_p50"] == pytest.approx(20, abs=2)
    assert m["itl_ms_p50"] == pytest.approx(served["itl_ms_p50"], abs=2)
    assert m["chunk_gap_ms_p50"] == pytest.approx(80, abs=8)
    assert m["tpot_ms_p50"] == pytest.approx(served["tpot_ms_p50"], abs=2)
