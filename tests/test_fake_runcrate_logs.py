"""Job logs: ordered chunks as the command writes them, held follow reads, done, truncation."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import time

from fake_runcrate import FakeRuncrate
from fake_runcrate.pytest_fixtures import FAST, client, fake, wait_until  # noqa: F401 - pytest fixtures
from runcrate import Runcrate

LONG = 600


def _first_follow(command: str, hold_s: float):
    """A job running `command` on a fake whose follow reads are held `hold_s`: its first follow read of the log
    from the start, and how long that read took."""
    with FakeRuncrate(**{**FAST, "follow_hold_s": hold_s}) as fake, \
            Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        job = sdk.jobs.run(command=command, gpu_type="A4000", max_runtime_minutes=LONG)
        started = time.monotonic()
        page = sdk.jobs.logs(job.id, after=0, follow=True)
        return page, time.monotonic() - started


def test_output_streams_as_written_in_two_ordered_chunks(client):
    job = client.jobs.run(command="echo a; sleep 0.3; echo b", gpu_type="A4000", max_runtime_minutes=LONG)
    chunks = list(client.jobs.follow_logs(job.id))
    assert [c.text for c in chunks] == ["a\n", "b\n"]
    assert [c.seq for c in chunks] == [1, 2]
    assert 0.25 < (chunks[1].ts - chunks[0].ts).total_seconds() < 1.0
    assert all(not c.model_extra for c in chunks)  # only the SDK model's fields: seq, ts, text


def test_stderr_is_combined_with_stdout_in_order_and_unmarked(client):
    job = client.jobs.run(command="echo out; sleep 0.1; echo err >&2", gpu_type="A4000", max_runtime_minutes=LONG)
    chunks = list(client.jobs.follow_logs(job.id))
    assert [c.text for c in chunks] == ["out\n", "err\n"]
    assert all(not c.model_extra for c in chunks)


def test_follow_returns_early_on_new_output():
    page, waited = _first_follow("sleep 0.5; echo late; sleep 30", hold_s=10.0)
    assert [c.text for c in page.chunks] == ["late\n"]
    assert page.cursor == 1 and not page.done
    assert 0.4 < waited < 5  # well before the 10 s hold


def test_follow_is_held_when_nothing_comes_and_answers_empty_not_done():
    page, waited = _first_follow("sleep 30", hold_s=0.6)
    assert 0.55 < waited < 1.95  # its own 0.6 s, not the fixture's 2 s
    assert (page.chunks, page.cursor, page.done) == ([], 0, False)


def test_a_held_follow_returns_when_the_job_ends():
    page, waited = _first_follow("sleep 0.4", hold_s=10.0)
    assert waited < 5  # well before the 10 s hold
    assert page.done and page.status == "succeeded"


def test_done_only_after_the_end_and_the_reader_caught_up(client):
    job = client.jobs.run(command="echo 1; sleep 0.05; echo 2; sleep 0.05; echo 3", gpu_type="A4000",
                          max_runtime_minutes=LONG)
    client.jobs.wait(job.id, poll_interval=0.05)
    first = client.jobs.logs(job.id, after=0, limit=1)
    assert not first.done and first.cursor == first.chunks[0].seq
    rest = client.jobs.logs(job.id, after=first.cursor)
    assert rest.done and "".join(c.text for c in first.chunks + rest.chunks) == "1\n2\n3\n"
    assert client.jobs.logs(job.id, after=rest.cursor).done


def test_a_log_over_the_cap_keeps_head_and_tail_with_a_marker():
    with FakeRuncrate(**{**FAST, "log_cap_bytes": 1200}) as fake, \
            Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        command = "for i in $(seq 1 300); do echo line-$i; sleep 0.001; done"
        job = sdk.jobs.run(command=command, gpu_type="A4000", max_runtime_minutes=LONG)
        assert sdk.jobs.wait(job.id, poll_interval=0.1).logs_truncated
        chunks = list(sdk.jobs.follow_logs(job.id))
        text = "".join(c.text for c in chunks)
        assert text.startswith("line-1\n") and text.endswith("line-300\n")
        assert "line-150\n" not in text
        markers = [c for c in chunks if c.seq is None]
        assert len(markers) == 1 and markers[0].ts is None
        page = sdk.jobs.logs(job.id, after=0, limit=10000)
        assert page.truncated and page.done
