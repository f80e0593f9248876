"""How the log reader waits while the API fails (the SDK's own error types): errors and 429s counted,
a doubling backoff up to its cap, the server's Retry-After obeyed within bounds, the clock reset by an
answer, and contact declared lost only after lost_after_s, with a one-line reason and no secret."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from runcrate import InternalServerError, RateLimitError

from gpubench.launcher.pace import Pace
from gpubench.launcher.redact import Redactor
from gpubench.launcher.runcrate.follow import ErrorClock, LostContact, retry_after_s

SECRET = "rc_live_follow-errors-secret-0042"


def rate_limited(retry_after: str | None = "0"):
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return RateLimitError("slow down", status_code=429, code="rate_limited",
                          response=httpx.Response(429, headers=headers))


def server_error(message="provider unavailable"):
    return InternalServerError(message, status_code=500, code="provider_unavailable",
                               response=httpx.Response(500, headers={"Retry-After": "0"}))


def fail(clock, exc, redact=None):
    started = time.monotonic()
    asyncio.run(clock.failed(exc, redact or Redactor([SECRET])))
    return time.monotonic() - started


def test_errors_and_429s_are_counted():
    clock = ErrorClock(Pace(poll_s=0.01))
    fail(clock, rate_limited())
    fail(clock, server_error())
    fail(clock, rate_limited())
    assert (clock.count, clock.rate_limited) == (3, 2)


def test_the_backoff_doubles_up_to_its_cap_and_an_answer_resets_it():
    pace = Pace(poll_s=20.0)  # cap: max(60, 6 * 20) = 120 s; Retry-After: 0 keeps the test quick
    clock = ErrorClock(pace)
    delays = []
    for _ in range(4):
        assert fail(clock, server_error()) < 5  # the server's Retry-After, not the 20 s backoff
        delays.append(clock.delay)
    assert delays == [40.0, 80.0, 120.0, 120.0]
    clock.ok()
    assert (clock.delay, clock.since) == (20.0, None)


def test_without_retry_after_the_backoff_is_slept():
    clock = ErrorClock(Pace(poll_s=0.3))
    assert 0.25 < fail(clock, rate_limited(None)) < 3


def test_contact_is_lost_only_after_lost_after_s():
    clock = ErrorClock(Pace(poll_s=0.01, lost_after_s=0.2))
    fail(clock, server_error())  # the first failure starts the clock, even with nothing left
    time.sleep(0.25)
    with pytest.raises(LostContact) as lost:
        fail(clock, server_error(f"token {SECRET} refused"))
    assert str(lost.value).startswith("HTTP 500 provider_unavailable: token ") and SECRET not in str(lost.value)


def test_a_zero_allowance_still_tries_once():
    clock = ErrorClock(Pace(poll_s=0.01, lost_after_s=0.0))
    fail(clock, server_error())  # now - since == 0: not yet lost


@pytest.mark.parametrize(("header", "seconds"), [("2.5", 2.5), ("0", 0.0), ("-3", 0.0), ("1000", 60.0),
                                                  ("60", 60.0), ("soon", None), (None, None)])
def test_retry_after_is_bounded(header, seconds):
    assert retry_after_s(rate_limited(header)) == seconds


def test_no_response_no_retry_after():
    assert retry_after_s(RuntimeError("no response here")) is None
    assert retry_after_s(RateLimitError("x", status_code=429, code="rate_limited")) is None
