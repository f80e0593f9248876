"""The server's own gauges of requests running and waiting, sampled through the timed phase and recorded beside the
asked concurrency; a server without them is said once."""

import time

import local_http
import pytest
import streaming_server

from gpubench.loadgen import server_gauges
from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

LOAD = {"model": "m", "users": 6, "requests": 24, "input_tokens": 8, "output_tokens": 20, "ignore_eos": True}


def test_a_server_that_runs_4_at_once_is_seen_running_4_with_the_rest_waiting():
    """6 users against a server that streams at most 4 answers at once (vLLM's --max-num-seqs 4): its gauges say 4
    running and 2 waiting, the client's own count says 6 in flight."""
    with streaming_server.running(ttft_ms=100, token_ms=40, max_streams=4, flavor="vllm") as url:
        run = run_load(LoadSpec(base_url=url, **LOAD))
    gauges, m = run.info()["server_gauges"], run.metrics()
    assert gauges["asked"] == 6 and gauges["samples"] >= 8  # ~5 s at 2 a second
    assert gauges["running"]["max"] == 4 and gauges["running"]["p50"] == 4
    assert gauges["waiting"]["max"] == 2 and gauges["waiting"]["p50"] == 2 and 1 < gauges["waiting"]["mean"] <= 2
    assert m["server_running_mean"] == pytest.approx(gauges["running"]["mean"], abs=0.01)  # info's is rounded
    assert m["server_waiting_mean"] == pytest.approx(gauges["waiting"]["mean"], abs=0.01)
    assert 4.5 < m["client_in_flight_mean"] <= 6
    assert len(gauges["series"]) == gauges["samples"] and gauges["series"][0][0] == 0


def test_a_server_without_gauges_is_said_once():
    with streaming_server.running(ttft_ms=20, token_ms=5) as url:
        run = run_load(LoadSpec(base_url=url, **{**LOAD, "requests": 8}))
    assert "no gauges of its running and waiting requests are known" in run.info()["server_gauges"]["note"]
    assert "server_running_mean" not in run.metrics()


class _CountedMetrics(local_http.QuietHandler):
    """vLLM's two gauges at GET /metrics, each read counted."""

    reads = 0

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).reads += 1
        self.answer(200, b"vllm:num_requests_running 3\nvllm:num_requests_waiting 1\n")


@pytest.fixture
def counted_metrics():
    _CountedMetrics.reads = 0
    with local_http.serving(_CountedMetrics) as url:
        yield url


def test_the_sampler_has_read_the_gauges_once_before_the_load_may_start(counted_metrics):
    """On busy cores a spawned sampler takes seconds to start: the load waits until it has read the gauges once, or a
    short timed phase ends before its first read (a fresh clone's vLLM counting test read no sample at all)."""
    sampler = server_gauges.GaugeSampler(counted_metrics, server_gauges.GAUGES["vllm"], interval_s=0.05)
    assert _CountedMetrics.reads == 1
    sampler.begin()
    time.sleep(0.3)
    gauges = sampler.stop()
    assert gauges.note is None and len(gauges.samples) >= 2 and _CountedMetrics.reads == 1 + len(gauges.samples)
    assert {(r, w) for _, r, w in gauges.samples} == {(3.0, 1.0)}


def test_a_ready_that_comes_after_the_wait_is_not_taken_for_the_samples(counted_metrics, monkeypatch):
    monkeypatch.setattr(server_gauges, "READY_TIMEOUT_S", 0)
    sampler = server_gauges.GaugeSampler(counted_metrics, server_gauges.GAUGES["vllm"], interval_s=0.05)
    sampler.begin()
    time.sleep(0.3)
    gauges = sampler.stop()
    assert isinstance(gauges, server_gauges.Gauges) and gauges.note is None and gauges.samples
