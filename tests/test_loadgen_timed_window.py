"""A load's result says when its timed phase ran on the wall clock, so a server's own logs and counters can be read
over the same seconds (benchmarks/serving_peer_table.py reads vLLM's generation counter over it): after the warm-up,
and as long as the timed phase's measured duration."""

import time

import pytest
import streaming_server

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

TTFT_MS, TOKEN_MS, TOKENS = 300.0, 20.0, 3


def test_the_timed_window_starts_after_the_warmup_and_lasts_the_timed_phase():
    with streaming_server.running(ttft_ms=TTFT_MS, token_ms=TOKEN_MS) as url:
        spec = LoadSpec(base_url=url, model="m", users=2, requests=4, warmup=2, input_tokens=8,
                        output_tokens=TOKENS, ignore_eos=True)
        before = time.time()
        run = run_load(spec)
        after = time.time()
    start, end = run.info()["timed_window_unix"]
    request_s = (TTFT_MS + (TOKENS - 1) * TOKEN_MS) / 1000
    assert start >= before + request_s  # the two warm-up requests, sent together, ended first
    assert end == pytest.approx(start + run.duration_s, abs=0.002)
    assert end <= after
    assert run.duration_s >= 2 * request_s  # each user's two timed requests, one after the other
