"""Users split over client processes: one start, one request counter, records merged as from one process."""

import statistics

import pytest
import streaming_server

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

LOAD = {"model": "m", "input_tokens": 8, "output_tokens": 8, "ignore_eos": True}


def test_two_client_processes_send_every_request_once_and_keep_the_users_in_flight():
    with streaming_server.running(ttft_ms=40, token_ms=10) as url:
        run = run_load(LoadSpec(base_url=url, users=8, requests=40, processes=2, **LOAD))
        served = streaming_server.stats(url)
    assert [r.index for r in run.records] == list(range(40))
    assert all(r.ok for r in run.records) and len({r.sent for r in run.records}) == 40
    # warm-up: 2 x the 8 users by default, then the 40 timed requests, each reaching the server once
    assert len(run.warmup) == 16 and served["requests"] == 56
    assert served["max_in_flight"] == 8  # 4 users a process, never more than the 8 together
    m = run.metrics()
    assert m["client_processes"] == 2 and len(run.clients) == 2
    assert 0 < m["client_cpu_pct"] < 100 and m["client_bound"] == 0
    assert m["p99_requests"] == 40
    # one shared start: 5 rounds of 8 requests of ~110 ms each, at least 0.55 s
    assert run.duration_s > 0.4
    sent = sorted(r.sent for r in run.records)
    # the first 8 (from both processes) go out together; one process after the other would put ~0.55 s between
    assert sent[7] - sent[0] < 0.3
    assert statistics.median(r.ttft_s for r in run.records) == pytest.approx(served["ttft_ms_p50"] / 1e3, abs=0.02)


def test_a_failed_warm_up_in_one_process_fails_the_load_with_the_reason():
    from gpubench.loadgen.run import LoadFailed

    with streaming_server.running(ttft_ms=5, token_ms=1, fail_every=3) as url, \
            pytest.raises(LoadFailed, match="warm-up request failed.*http_500"):
        run_load(LoadSpec(base_url=url, users=4, requests=8, processes=2, **LOAD))


def test_client_processes_follow_the_users_and_leave_most_cores_to_the_server():
    spec = LoadSpec(base_url="http://h:1", model="m", users=64, requests=320)
    assert spec.client_processes(cores=16) == 4
    assert spec.client_processes(cores=2) == 1
    assert LoadSpec(base_url="http://h:1", model="m", users=1).client_processes(cores=16) == 1
    assert LoadSpec(base_url="http://h:1", model="m", users=None, rate=600, requests=1000).client_processes(64) == 3
    assert LoadSpec(base_url="http://h:1", model="m", users=64, processes=3).client_processes(cores=2) == 3
    assert LoadSpec(base_url="http://h:1", model="m", users=2, processes=4).client_processes() == 2  # a user each
    assert LoadSpec(base_url="http://h:1", model="m", users=3, rate=9, processes=8).client_processes() == 3
    assert LoadSpec(base_url="http://h:1", model="m", users=64, requests=320).warmup_requests == 128
    assert LoadSpec(base_url="http://h:1", model="m", users=64, warmup=0).warmup_requests == 0


def test_connections_the_server_closed_while_the_processes_waited_are_opened_again_before_the_start():
    """One user a process; the first process has 2 warm-up requests, the second 1, so the second waits a whole request
    (~2.1 s) for the first: a server that closes a connection idle for 1.5 s (uvicorn's 5 s, shortened) closes its
    connection meanwhile. It is opened again before the start, so no timed request waits for a connection."""
    with streaming_server.running(ttft_ms=2000, token_ms=10, keep_alive_s=1.5) as url:
        run = run_load(LoadSpec(base_url=url, users=2, requests=6, processes=2, warmup=3, **LOAD))
        served, accepted = streaming_server.stats(url), streaming_server.accepted(url)
    first_sent, last_end = min(r.sent for r in run.records), max(r.sent + r.e2e_s for r in run.records)
    assert served["idle_closed"] >= 1  # the server did close one
    assert [t for t in accepted if first_sent <= t <= last_end] == []  # none was opened while timing
    assert run.info()["connections_opened_while_timing"] == 0
    assert all(r.ok for r in run.records)
