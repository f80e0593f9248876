"""Poisson arrivals: exactly the asked number of requests, spread out in time, capped when asked."""

import statistics

import pytest
import streaming_server

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec


def test_poisson_sends_the_request_count_at_the_rate_and_respects_the_cap():
    base = {"model": "m", "requests": 60, "warmup": 0, "input_tokens": 8, "output_tokens": 4, "ignore_eos": True,
            "rate": 100.0}
    with streaming_server.running(ttft_ms=50, token_ms=10) as url:
        free = run_load(LoadSpec(base_url=url, users=None, **base))
        unlimited = streaming_server.stats(url)["max_in_flight"]
    with streaming_server.running(ttft_ms=50, token_ms=10) as url:
        capped = run_load(LoadSpec(base_url=url, users=2, **base))
        limited = streaming_server.stats(url)["max_in_flight"]
    assert free.metrics()["requests_ok"] == 60 and capped.metrics()["requests_ok"] == 60
    assert free.spec.setup_name == "r100" and capped.spec.setup_name == "r100-u2"
    # 60 arrivals at 100/s take about 0.6 s, plus the last request's 80 ms; not all at once
    assert 0.3 < free.duration_s < 1.5
    assert 5 < unlimited < 60  # several overlap (80 ms each at 100/s), far from all at once
    assert limited == 2
    # capped at 2 in flight, 80 ms each: no faster than 25 requests/s
    assert capped.duration_s > 60 / 25 * 0.95
    assert statistics.median(r.ttft_s for r in free.records) == pytest.approx(0.05, rel=0.2)
    # exponential gaps: their spread is about their mean (0 for a fixed interval, far more for bursts)
    sent = sorted(r.sent for r in free.records)
    gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(0.01, rel=0.4)
    assert 0.6 < statistics.stdev(gaps) / statistics.mean(gaps) < 1.5
