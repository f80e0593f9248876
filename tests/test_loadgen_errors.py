"""Failed requests are counted by kind, and a run past the allowed error rate fails with the count."""

import pytest
import streaming_server

from gpubench.loadgen.run import LoadFailed, run_load
from gpubench.loadgen.spec import LoadSpec


def spec(url: str, **overrides) -> LoadSpec:
    values = {"base_url": url, "model": "m", "users": 4, "requests": 20, "warmup": 0, "input_tokens": 8,
              "output_tokens": 4, "ignore_eos": True}
    return LoadSpec(**{**values, **overrides})


def test_server_errors_are_counted_and_fail_the_run_past_the_threshold():
    with streaming_server.running(ttft_ms=5, token_ms=1, fail_every=4) as url:  # requests 4, 8, ... answer 500
        with pytest.raises(LoadFailed, match=r"5 of 20 requests failed \(25\.0% > the allowed 20\.0%\): http_500 x5"):
            run_load(spec(url, max_error_rate=0.2))
        run = run_load(spec(url, max_error_rate=0.3))
    m = run.metrics()
    assert (m["requests_ok"], m["requests_failed"], m["error_rate"]) == (15, 5, 0.25)
    assert run.errors == {"http_500": 5}
    assert "injected failure" in run.info()["error_examples"]["http_500"]
    # throughput counts only what was answered
    assert m["output_tokens_per_s"] == pytest.approx(15 * 4 / run.duration_s)


def test_a_failed_warmup_stops_before_timing():
    with streaming_server.running(fail_every=1) as url, pytest.raises(LoadFailed, match="warm-up request failed"):
        run_load(spec(url, warmup=1))


def test_an_unreachable_server_is_a_connection_error():
    with streaming_server.running() as url:
        pass  # stopped: nothing listens there any more
    run = run_load(spec(url, requests=3, users=1), check=False)
    assert run.errors == {"connection": 3}
    assert "cannot connect" in run.failed[0].error


def test_a_kept_alive_connection_closed_by_the_server_is_retried_on_a_new_one():
    with streaming_server.running(ttft_ms=5, token_ms=1, drop_reused=True) as url:
        run = run_load(spec(url, users=2, requests=6, warmup=2))
        dropped = streaming_server.stats(url)["dropped"]
    assert run.metrics()["requests_ok"] == 6 and dropped >= 2
