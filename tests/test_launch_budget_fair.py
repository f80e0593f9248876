"""The budget serves waiting jobs in turn: a job with one request is not stuck behind a chatty one's
queue, and the rate holds for all of them together."""

from __future__ import annotations

import asyncio
import time

from gpubench.launcher.runcrate.budget import RequestBudget, lane_of


def test_lanes_come_from_the_request_path():
    assert lane_of("/api/v1/jobs/job_12/logs") == "job_12"
    assert lane_of("/api/v1/jobs/job_12") == "job_12"
    assert lane_of("/api/v1/instances/inst_3/status") == "inst_3"
    for path in ("/api/v1/jobs", "/api/v1/instances/types", "/api/v1/jobs/uploads"):
        assert lane_of(path) == "launcher"


def test_a_quiet_job_is_served_between_a_chatty_ones_requests():
    rate = 40.0

    async def scenario():
        budget = RequestBudget(rate=rate, burst=1)
        served: list[tuple[str, float]] = []

        async def ask(lane):
            await budget.acquire(lane)
            served.append((lane, time.monotonic()))

        began = time.monotonic()
        chatty = [asyncio.create_task(ask("chatty")) for _ in range(20)]
        await asyncio.sleep(0.06)  # the chatty queue is already waiting
        quiet = asyncio.create_task(ask("quiet"))
        await asyncio.gather(*chatty, quiet)
        return served, time.monotonic() - began

    served, took = asyncio.run(scenario())
    order = [lane for lane, _ in served]
    assert order.index("quiet") <= 5, order  # served within a couple of tokens, not after all 20
    assert took >= (21 - 1) / rate * 0.9  # 21 requests, one from the burst: the rate held for all


def test_a_429_halves_the_rate_and_it_comes_back_slowly():
    budget = RequestBudget(rate=2.0, burst=5)
    budget.answered(429, 0.5)
    assert budget.current_rate == 1.0
    assert budget.holding_back() is not None and "429" in budget.holding_back()
    for _ in range(10):
        budget.answered(200, None)
    assert 1.0 < budget.current_rate < 2.0  # ten answers later: faster, not yet back
    for _ in range(30):
        budget.answered(200, None)
    assert budget.current_rate == 2.0 and budget.holding_back() is None
