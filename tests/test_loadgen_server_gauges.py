"""The server's own gauges of requests running and waiting, sampled through the timed phase and recorded beside the
asked concurrency; a server without them is said once."""

import streaming_server

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

LOAD = {"model": "m", "users": 8, "requests": 24, "input_tokens": 8, "output_tokens": 20, "ignore_eos": True}


def test_a_server_that_runs_4_at_once_is_seen_running_4_with_the_rest_waiting():
    """8 users against a server that streams at most 4 answers at once (vLLM's --max-num-seqs 4): its gauges say 4
    running and about 4 waiting, the client's own count says 8 in flight."""
    with streaming_server.running(ttft_ms=100, token_ms=40, max_streams=4, flavor="vllm") as url:
        run = run_load(LoadSpec(base_url=url, **LOAD))
    gauges, m = run.info()["server_gauges"], run.metrics()
    assert gauges["asked"] == 8 and gauges["samples"] >= 8  # ~7 s at 2 a second
    assert gauges["running"]["max"] == 4 and gauges["running"]["p50"] == 4
    assert 2 < gauges["waiting"]["mean"] <= 4 and gauges["waiting"]["max"] == 4
    assert m["server_running_mean"] == gauges["running"]["mean"]
    assert 6 < m["client_in_flight_mean"] <= 8
    assert len(gauges["series"]) == gauges["samples"] and gauges["series"][0][0] == 0


def test_a_server_without_gauges_is_said_once():
    with streaming_server.running(ttft_ms=20, token_ms=5) as url:
        run = run_load(LoadSpec(base_url=url, **{**LOAD, "requests": 8}))
    assert "no gauges of its running and waiting requests are known" in run.info()["server_gauges"]["note"]
    assert "server_running_mean" not in run.metrics()
