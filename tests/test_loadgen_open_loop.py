"""The open loop: a gamma schedule at the asked mean rate, the schedule delay and E2E from the due time."""

import statistics

import pytest
import streaming_server

from gpubench.loadgen import arrivals
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.metrics import summarize
from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec


@pytest.mark.parametrize("burstiness, spread", [(1.0, 1.0), (0.25, 2.0), (4.0, 0.5)])
def test_the_schedule_has_the_asked_mean_rate_and_the_burstiness_sets_its_spread(burstiness, spread):
    due = arrivals.schedule(4001, rate=50.0, burstiness=burstiness, seed=3)
    gaps = [b - a for a, b in zip(due, due[1:], strict=False)]
    assert due[0] == 0 and min(gaps) >= 0
    assert due[-1] == pytest.approx(4000 / 50.0)  # exactly the rate, not the draws' noise around it
    # a gamma of shape k has a coefficient of variation of 1 / sqrt(k)
    assert statistics.stdev(gaps) / statistics.mean(gaps) == pytest.approx(spread, rel=0.12)
    assert arrivals.schedule(10, 5.0, burstiness, seed=3) == arrivals.schedule(10, 5.0, burstiness, seed=3)


def test_a_capped_open_loop_counts_the_wait_for_a_slot_from_the_due_time():
    load = {"model": "m", "requests": 30, "warmup": 0, "input_tokens": 8, "output_tokens": 4, "ignore_eos": True}
    with streaming_server.running(ttft_ms=30, token_ms=5) as url:
        free = run_load(LoadSpec(base_url=url, users=None, rate=50.0, **load))
        capped = run_load(LoadSpec(base_url=url, users=1, rate=200.0, **load))
    f, c = free.metrics(), capped.metrics()
    assert f["requested_rate"] == 50 and f["achieved_rate"] == pytest.approx(50, rel=0.15)
    assert f["schedule_delay_ms_p50"] < 20  # sent about when due (the busy test machine's lateness allowed)
    # one slot, 45 ms a request, due every 5 ms: each waits for those before it, and its E2E says so
    assert c["achieved_rate"] < 30 and c["schedule_delay_ms_p99"] > 500
    assert c["e2e_from_schedule_ms_p50"] > c["e2e_ms_p50"] + 200
    for r in capped.records:
        assert r.e2e_from_schedule_s == pytest.approx(r.e2e_s + r.schedule_delay_s)


def test_client_bound_marks_a_client_process_past_85_percent_of_a_core():
    records = [RequestRecord(index=0, ok=True, sent=1.0, ttft_s=0.1, last_token_s=0.2, e2e_s=0.2, tokens_received=2)]
    assert summarize(records, 1.0, 0.1, client_cpu_pcts=[90.0, 20.0])["client_bound"] == 1
    m = summarize(records, 1.0, 0.1, client_cpu_pcts=[80.0])
    assert m["client_bound"] == 0 and m["client_cpu_pct"] == 80 and m["p99_requests"] == 1
    assert "client_bound" not in summarize(records, 1.0, 0.1)
