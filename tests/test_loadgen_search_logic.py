"""The search's steps (gpubench/loadgen/search.py) against a load whose verdict is known: a value passes when it is
at most the answer. The probes it runs are worked out by hand from the rules: start at the saturation load's
throughput, double or halve to a bracket, bisect to the tolerance."""

import pytest

from gpubench.loadgen import search, slo
from gpubench.loadgen.run import LoadFailed

TARGET = slo.Target(ttft_ms=2000, tpot_ms=100)


def server(answer: float, saturation_rate: float = 50.0, saturation_e2e_ms: float = 2000.0, variable: str = "rate",
           requests: int = 1000, fail_at: float | None = None):
    """measure(value) of a server that meets the target up to `answer`; the saturation load (value None) misses it
    unless the answer is infinite. `tried` lists the values asked, in order."""
    tried = []

    def measure(value):
        tried.append(value)
        if fail_at is not None and value == fail_at:
            raise LoadFailed("warm-up request failed (1 of 2): http_500: boom")
        if value is None:
            ran_at = float(requests) if variable == "users" else None
            metrics = {"requests_per_s": saturation_rate, "e2e_ms_mean": saturation_e2e_ms, "requests_ok": requests,
                       "ttft_ms_p99": 3000.0, "tpot_ms_p99": 150.0}
            return search.Probe(ran_at, metrics, answer == float("inf"), saturation=True)
        met = value <= answer
        metrics = {"requests_per_s": min(value, answer), "ttft_ms_p99": 500.0 if met else 2500.0,
                   "tpot_ms_p99": 50.0, "requests_ok": requests, "goodput_tokens_per_s": 10 * value}
        return search.Probe(value, metrics, met)

    return measure, tried


def test_a_rate_search_brackets_from_the_saturation_throughput_then_bisects_to_the_tolerance():
    # start 50/s misses; 25 meets; bisect [25, 50]: 37.5 meets, 43.75 misses, 40.62 misses, 39.06 meets (40.62 is
    # within 5% of 39.06: 40.62 <= 39.06 x 1.05 = 41.02): the answer 39.06, the true 40 between it and 40.62
    measure, tried = server(answer=40.0)
    found = search.find(measure, search.SearchSpec("rate", TARGET), requests=1000)
    assert tried == [None, 50.0, 25.0, 37.5, 43.75, 40.62, 39.06]
    assert found.value == 39.06 and found.failing.value == 40.62
    assert found.value <= 40.0 <= found.failing.value <= found.value * 1.05
    assert found.stopped == "within the tolerance: 39.06 requests/s met the target and 40.62 requests/s did not"
    metrics = found.metrics()
    assert metrics == {"slo_max_rate": 39.06, "slo_search_probes": 7.0,
                       "slo_search_bracket_pct": pytest.approx(100 * (40.62 / 39.06 - 1))}
    table = found.info(1000)["probes"]
    assert [row["rate"] for row in table] == ["all at once", 50.0, 25.0, 37.5, 43.75, 40.62, 39.06]
    assert [row["met"] for row in table] == [False, False, True, True, False, False, True]
    assert table[0]["saturation"] is True and "saturation" not in table[1]


def test_a_passing_start_doubles_until_a_rate_fails():
    measure, tried = server(answer=130.0, saturation_rate=50.0)
    found = search.find(measure, search.SearchSpec("rate", TARGET, tolerance=0.1), requests=1000)
    # 50, 100 meet; 200 misses; 150 misses; 125 meets; 137.5 misses (1.1 x 125 = 137.5: within 10%)
    assert tried == [None, 50.0, 100.0, 200.0, 150.0, 125.0, 137.5]
    assert found.value == 125.0 and found.failing.value == 137.5


def test_a_users_search_starts_at_littles_law_and_ends_one_user_apart():
    # saturation: 100 requests at once, 20 requests/s, mean E2E 2 s: 40 in flight on average -> start at 40
    measure, tried = server(answer=13, saturation_rate=20.0, saturation_e2e_ms=2000.0, variable="users",
                            requests=100)
    found = search.find(measure, search.SearchSpec("users", TARGET), requests=100)
    assert tried == [None, 40.0, 20.0, 10.0, 15.0, 12.0, 13.0, 14.0]
    assert (found.value, found.failing.value) == (13.0, 14.0)
    assert found.metrics()["slo_max_users"] == 13.0


def test_users_never_exceed_the_requests_and_the_saturation_load_is_the_failing_one():
    # the answer is every user but one: the search bisects up to the saturation load's 100 users
    measure, tried = server(answer=99, saturation_rate=20.0, saturation_e2e_ms=5000.0, variable="users",
                            requests=100)
    found = search.find(measure, search.SearchSpec("users", TARGET), requests=100)
    assert tried[:2] == [None, 99.0]  # the estimate, 100, capped below the saturation load's 100 users
    assert found.value == 99.0 and found.failing.value == 100.0 and found.failing.saturation


def test_met_with_every_request_at_once_stops_at_once():
    measure, tried = server(answer=float("inf"), saturation_rate=61.5)
    found = search.find(measure, search.SearchSpec("rate", TARGET), requests=1000)
    assert tried == [None] and found.value == 61.5 and found.failing is None
    assert found.stopped.startswith("met with every request at once")


def test_none_met_halves_to_a_sixteenth_of_the_start_then_says_so():
    measure, tried = server(answer=1.0, saturation_rate=64.0)
    found = search.find(measure, search.SearchSpec("rate", TARGET), requests=1000)
    assert tried == [None, 64.0, 32.0, 16.0, 8.0, 4.0]
    assert found.best is None and found.value == 0.0 and found.metrics()["slo_max_rate"] == 0.0
    assert found.stopped == "none met: the lowest value tried, 4 requests/s, missed the target (halving stops at" \
                            " 1/16 of the start)"
    measure, tried = server(answer=0, saturation_rate=5.0, saturation_e2e_ms=1000.0, variable="users", requests=50)
    found = search.find(measure, search.SearchSpec("users", TARGET), requests=50)
    assert tried == [None, 5.0, 2.0, 1.0] and found.best is None and found.failing.value == 1.0


def test_the_probe_budget_stops_the_search_and_says_so():
    measure, tried = server(answer=40.0)
    found = search.find(measure, search.SearchSpec("rate", TARGET, max_probes=4), requests=1000)
    assert tried == [None, 50.0, 25.0, 37.5] and found.value == 37.5
    assert found.stopped.startswith("stopped after 4 probes")


def test_a_probe_that_cannot_run_ends_the_search_with_what_was_measured():
    measure, _ = server(answer=40.0, fail_at=37.5)
    with pytest.raises(search.SearchFailed, match=r"probe 4 \(37.5 requests/s\): warm-up request failed") as caught:
        search.find(measure, search.SearchSpec("rate", TARGET), requests=1000)
    assert [p.value for p in caught.value.probes] == [None, 50.0, 25.0]


def test_a_saturation_load_without_an_ok_request_gives_no_start():
    def measure(value):
        return search.Probe(None, {}, False, "1000 of 1000 requests failed", saturation=True)

    with pytest.raises(search.SearchFailed, match="no ok request to start from: 1000 of 1000 requests failed"):
        search.find(measure, search.SearchSpec("rate", TARGET), requests=1000)


def test_a_probe_table_says_when_its_p99s_rest_on_fewer_than_1000_requests():
    measure, _ = server(answer=40.0)
    found = search.find(measure, search.SearchSpec("rate", TARGET), requests=200)
    assert "a p99 of 200 requests (fewer than 1,000) is the slowest few of them" in found.info(200)["how"]
    assert "fewer than" not in search.find(server(answer=40.0)[0], search.SearchSpec("rate", TARGET),
                                           requests=1000).info(1000)["how"]
