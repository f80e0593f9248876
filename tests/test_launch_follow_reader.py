"""The log reader in process, with the unmodified SDK against the fake API: whole lines in order with the
last one flushed, secrets out, its counters exact; a one-shot read that stops at what exists; chunks a
server sends again skipped; the truncation marker a line of its own; API errors counted and survived,
their clock reset by an answer; empty reads spaced by idle_gap_s (a least gap, never an upper bound)."""

from __future__ import annotations

import asyncio
import time

import pytest
from fake_runcrate import FakeRuncrate
from runcrate import AsyncRuncrate, Runcrate

from gpubench.launcher.pace import Pace
from gpubench.launcher.redact import Redactor
from gpubench.launcher.runcrate.follow import LogFollower, LostContact

SECRET = "rc_live_follow-reader-secret-0099"
LOGS = r"/api/v1/jobs/[^/]+/logs"
FAST = {"minute_s": 0.05, "queue_s": 0.05, "start_s": 0.05, "container_ready_s": 0.2, "follow_hold_s": 1.0}
QUICK = Pace(poll_s=0.01, stream_gap_s=0.01, lost_after_s=30.0)


def start_job(fake, command: str, wait: bool = True) -> str:
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        job = sdk.jobs.run(command=command, gpu_type="A4000", max_runtime_minutes=600)
        if wait:
            sdk.jobs.wait(job.id, poll_interval=0.05)
    return job.id


def wait_for_output(fake, job_id: str, text: str) -> None:
    deadline = time.monotonic() + 30
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        while text not in "".join(c.text for c in sdk.jobs.logs(job_id, after=0).chunks):
            assert time.monotonic() < deadline, f"no {text!r} in the job's output"
            time.sleep(0.05)


class Reader:
    """A LogFollower of one job, what it passed on, and when each of its requests started."""

    def __init__(self, fake, job_id: str, pace: Pace = QUICK, follow: bool = True):
        self.fake, self.job_id, self.pace, self.follow = fake, job_id, pace, follow
        self.lines: list[str] = []
        self.pages: list = []
        self.sent: list[float] = []
        self.follower: LogFollower | None = None
        self.on_page = self.pages.append

    def run(self) -> LogFollower:
        async def read():
            async with AsyncRuncrate(api_key=self.fake.api_key, base_url=self.fake.base_url, max_retries=0) as client:
                http = client._transport._client  # the SDK's httpx client: note when each request starts

                async def started(request):
                    self.sent.append(time.monotonic())

                http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], started]}
                if self.follower is None:
                    self.follower = LogFollower(client, self.job_id, self.lines.append, self.pace,
                                                Redactor([SECRET]), on_page=lambda page: self.on_page(page),
                                                follow=self.follow)
                self.follower.client = client
                await self.follower.run()

        asyncio.run(read())
        return self.follower


def last_seq(pages) -> int:
    return max(c.seq for page in pages for c in page.chunks if c.seq is not None)


def test_a_finished_jobs_log_read_whole_in_one_request():
    with FakeRuncrate(**FAST) as fake:
        job = start_job(fake, f"printf 'one\\n'; sleep 0.1; printf 'two {SECRET} x\\nthree'; sleep 0.1; "
                              "printf ' and more\\n\\nno newline at the end'")
        reader = Reader(fake, job)
        follower = reader.run()
    assert reader.lines == ["one", "two *** x", "three and more", "", "no newline at the end"]
    assert len(reader.pages) == 1 and reader.pages[0].done
    assert follower.stats() == {"log_requests": 1, "log_errors": 0, "rate_limited": 0, "cursor": last_seq(reader.pages),
                                "lines": 5, "complete": True, "truncated": False}
    assert last_seq(reader.pages) >= 3


def test_without_follow_what_exists_is_read_and_chunks_sent_again_are_skipped():
    with FakeRuncrate(**FAST) as fake:
        job = start_job(fake, "echo first; sleep 0.05; echo second; sleep 1; echo third; sleep 60", wait=False)
        wait_for_output(fake, job, "second")
        reader = Reader(fake, job, follow=False)
        follower = reader.run()
        assert reader.lines == ["first", "second"]
        assert [bool(p.chunks) for p in reader.pages] == [True, False]  # stopped at the first empty read
        assert (follower.done, follower.requests, follower.cursor) == (False, 2, last_seq(reader.pages))
        wait_for_output(fake, job, "third")
        follower.cursor = 0  # a server answering from an older cursor sends chunks 1 and 2 again
        reader.run()
        assert reader.lines == ["first", "second", "third"]
        assert follower.stats()["lines"] == 3 and follower.cursor == last_seq(reader.pages) and follower.requests == 4
        assert [c.seq for c in reader.pages[2].chunks][0] == 1  # the server did send them again


def test_the_truncation_marker_is_a_line_of_its_own():
    # Output without newlines, over the cap: the head the API keeps ends in the middle of a line.
    with FakeRuncrate(**{**FAST, "log_cap_bytes": 600}) as fake:
        job = start_job(fake, "printf start; for i in $(seq 1 200); do printf ' %d' $i; sleep 0.002; done; "
                              "printf '\\nend\\n'")
        reader = Reader(fake, job)
        follower = reader.run()
    head, blank, marker, tail, end = reader.lines
    assert head.startswith("start 1 2 3 ") and "[" not in head
    assert (blank, marker) == ("", "[... output truncated: the middle of this log was dropped ...]")
    assert tail.endswith(" 199 200") and end == "end"
    assert follower.stats()["truncated"] is True and follower.stats()["lines"] == 5
    numbers = [int(n) for n in (head.split()[1:] + tail.split())]
    assert numbers == sorted(numbers) and len(numbers) < 200  # the middle is gone, nothing is repeated


def test_api_errors_are_counted_and_the_read_goes_on():
    with FakeRuncrate(**FAST) as fake:
        job = start_job(fake, "echo a; echo b")
        fake.inject("GET", LOGS, 500, times=2, headers={"Retry-After": "0"})
        reader = Reader(fake, job)
        follower = reader.run()
        assert reader.lines == ["a", "b"]
        assert follower.stats() == {"log_requests": 3, "log_errors": 2, "rate_limited": 0, "cursor": last_seq(
            reader.pages), "lines": 2, "complete": True, "truncated": False}
        fake.inject("GET", LOGS, 429, times=1, headers={"Retry-After": "0"})
        again = Reader(fake, job).run()
        assert (again.requests, again.errors.count, again.errors.rate_limited) == (2, 1, 1)


def test_an_answer_restarts_the_lost_contact_clock():
    # Errors 0.4 s apart, with an answer between them: contact is not lost (lost_after_s 0.3).
    with FakeRuncrate(**FAST) as fake:
        job = start_job(fake, "echo a; sleep 0.8; echo b", wait=False)
        wait_for_output(fake, job, "a")
        fake.inject("GET", LOGS, 500, times=1, headers={"Retry-After": "0"})
        reader = Reader(fake, job, pace=Pace(poll_s=0.01, stream_gap_s=0.01, lost_after_s=0.3))

        def page_then_fail(page):
            reader.pages.append(page)
            if len(reader.pages) == 1:
                time.sleep(0.4)
                fake.inject("GET", LOGS, 500, times=1, headers={"Retry-After": "0"})

        reader.on_page = page_then_fail
        follower = reader.run()
    assert reader.lines == ["a", "b"] and follower.errors.count == 2


def test_contact_lost_when_errors_outlast_lost_after_s():
    with FakeRuncrate(**FAST) as fake:
        job = start_job(fake, "echo a")
        fake.inject("GET", LOGS, 500, times=None, headers={"Retry-After": "0.05"}, message=f"key {SECRET} refused")
        reader = Reader(fake, job, pace=Pace(poll_s=0.01, lost_after_s=0.2))
        with pytest.raises(LostContact) as lost:
            reader.run()
    assert str(lost.value).startswith("HTTP 500 ") and str(lost.value).endswith(": key *** refused")
    stats = reader.follower.stats()
    assert stats["log_requests"] == stats["log_errors"] >= 3 and reader.lines == []
    assert {k: stats[k] for k in ("rate_limited", "cursor", "lines", "complete", "truncated")} == {
        "rate_limited": 0, "cursor": 0, "lines": 0, "complete": False, "truncated": False}


def test_a_held_read_returns_with_the_output():
    # Reads are held by the server (follow=true): the first one answers with the output as it comes,
    # not empty after idle_gap_s (4.5 s here).
    with FakeRuncrate(**{**FAST, "follow_hold_s": 20.0}) as fake:
        job = start_job(fake, "sleep 1; echo late", wait=False)
        reader = Reader(fake, job, pace=Pace(poll_s=3.0, stream_gap_s=0.01))
        reader.run()
    assert [c.text for c in reader.pages[0].chunks] == ["late\n"] and reader.lines == ["late"]


def test_empty_reads_are_spaced_by_the_idle_gap():
    # The fake holds a follow read 0.05 s; idle_gap_s is 1.5 * poll_s = 0.3 s.
    pace = Pace(poll_s=0.2, stream_gap_s=0.01)
    with FakeRuncrate(**{**FAST, "follow_hold_s": 0.05}) as fake:
        job = start_job(fake, "sleep 1; echo late", wait=False)
        reader = Reader(fake, job, pace=pace)
        follower = reader.run()
    assert reader.lines == ["late"] and follower.done
    starts = reader.sent
    assert len(starts) == len(reader.pages) == follower.requests
    empty = [starts[i + 1] - starts[i] for i, page in enumerate(reader.pages[:-1]) if not page.chunks]
    assert empty and min(empty) >= pace.idle_gap_s - 0.01
