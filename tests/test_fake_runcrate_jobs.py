"""Jobs really run their command with bash: statuses, exit codes, timeouts, cancel, cost, artifacts."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import os
import time

import pytest
import runcrate
from fake_runcrate import FakeRuncrate
from fake_runcrate.pytest_fixtures import FAST, client, fake, wait_until  # noqa: F401 - pytest fixtures
from runcrate import Runcrate

LONG = 600  # API minutes: 30 s at the test speed


def test_a_job_goes_queued_starting_running_succeeded(fake, client):
    job = client.jobs.run(command="sleep 0.3", gpu_type="A4000", max_runtime_minutes=LONG)
    seen = [job.status]
    while not job.finished:
        job = client.jobs.get(job.id)
        if job.status != seen[-1]:
            seen.append(job.status)
        time.sleep(0.01)
    assert seen == ["queued", "starting", "running", "succeeded"]
    assert job.exit_code == 0 and job.started_at and job.ended_at
    assert job.attempts[0].status == "succeeded"


def test_the_command_sees_its_env_output_dir_and_attempt(client):
    job = client.jobs.run(
        command='echo "$GREETING $RUNCRATE_JOB_ATTEMPT"; echo data > "$RUNCRATE_OUTPUT_DIR/r.txt"; '
        'command -v gpubench',
        gpu_type="L40S",
        max_runtime_minutes=LONG,
        env={"GREETING": "hello"},
    )
    text = "".join(chunk.text for chunk in client.jobs.follow_logs(job.id))
    assert text.startswith("hello 1\n")
    assert text.rstrip().endswith("/bin/gpubench")
    assert [(a.path, a.bytes) for a in client.jobs.artifacts.list(job.id)] == [("r.txt", 5)]
    assert client.jobs.artifacts.download(job.id, "r.txt") == b"data\n"


def test_nonzero_exit_fails_with_the_exit_code_and_keeps_artifacts(client):
    job = client.jobs.run(command='echo x > "$RUNCRATE_OUTPUT_DIR/partial"; exit 3', gpu_type="A4000",
                          max_runtime_minutes=LONG)
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert (job.status, job.exit_code) == ("failed", 3)
    assert [a.path for a in client.jobs.artifacts.list(job.id)] == ["partial"]


def test_a_command_past_max_runtime_is_killed_as_timed_out():
    with FakeRuncrate(**{**FAST, "minute_s": 0.5}) as slow, \
            Runcrate(api_key=slow.api_key, base_url=slow.base_url) as sdk:
        job = sdk.jobs.run(command='echo "$$" > pid; echo x > "$RUNCRATE_OUTPUT_DIR/o"; exec sleep 30',
                           gpu_type="A4000", max_runtime_minutes=1)
        started = time.monotonic()
        job = sdk.jobs.wait(job.id, poll_interval=0.05)
        assert job.status == "timed_out" and job.exit_code is None
        assert 0.4 < time.monotonic() - started < 3
        assert [a.path for a in sdk.jobs.artifacts.list(job.id)] == ["o"]
        pid = int((slow.jobs[job.id].attempt.workspace / "pid").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_safety_net_on_its_own_clock_outlasts_the_billing_clock():
    """runtime_minute_s: max_runtime_minutes counts its own minutes (here 2 s); billing, one a 0.05 s."""
    with FakeRuncrate(**{**FAST, "minute_s": 0.05, "runtime_minute_s": 2.0}) as fake_, \
            Runcrate(api_key=fake_.api_key, base_url=fake_.base_url) as sdk:
        outlives_billing = sdk.jobs.run(command="sleep 0.5", gpu_type="A4000", max_runtime_minutes=1)
        past_its_own = sdk.jobs.run(command="exec sleep 30", gpu_type="A4000", max_runtime_minutes=1)
        done = sdk.jobs.wait(outlives_billing.id, poll_interval=0.05)
        assert (done.status, done.exit_code) == ("succeeded", 0)  # 0.5 s: 10 billed minutes, within its 2 s
        assert done.cost_usd > 0
        started = time.monotonic()
        cut = sdk.jobs.wait(past_its_own.id, poll_interval=0.05)
        assert cut.status == "timed_out" and time.monotonic() - started < 10


def test_cancel_kills_the_command_and_repeats_harmlessly(fake, client):
    job = client.jobs.run(command='echo "$$" > pid; exec sleep 30', gpu_type="A4000", max_runtime_minutes=LONG)
    wait_until(lambda: client.jobs.get(job.id).status == "running")
    workspace = fake.jobs[job.id].attempt.workspace
    pid = int(wait_until(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text()))
    assert client.jobs.cancel(job.id).status == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert client.jobs.cancel(job.id).status == "cancelled"


def test_cancel_of_a_job_that_ended_otherwise_is_409(client):
    job = client.jobs.run(command="true", gpu_type="A4000", max_runtime_minutes=LONG)
    client.jobs.wait(job.id, poll_interval=0.05)
    with pytest.raises(runcrate.ConflictError):
        client.jobs.cancel(job.id)


def test_delete_refuses_a_live_job_and_removes_an_ended_one(client):
    job = client.jobs.run(command="sleep 30", gpu_type="A4000", max_runtime_minutes=LONG)
    with pytest.raises(runcrate.ConflictError):
        client.jobs.delete(job.id)
    client.jobs.cancel(job.id)
    client.jobs.delete(job.id)
    with pytest.raises(runcrate.NotFoundError):
        client.jobs.get(job.id)


def test_cost_grows_while_running_and_is_frozen_after(client):
    job = client.jobs.run(command="sleep 0.6", gpu_type="H100", max_runtime_minutes=LONG)
    wait_until(lambda: client.jobs.get(job.id).status == "running")
    early = client.jobs.get(job.id).cost_usd
    time.sleep(0.2)
    later = client.jobs.get(job.id).cost_usd
    assert 0 < early < later
    done = client.jobs.wait(job.id, poll_interval=0.05)
    time.sleep(0.1)
    assert client.jobs.get(job.id).cost_usd == done.cost_usd == round(done.cost_usd, 6)
    assert done.cost_per_hour == 2.49
    # Billing counts API time: ~0.7 real s of machine at 50 ms per minute is ~14 minutes of an H100.
    assert 2.49 * 10 / 60 < done.cost_usd < 2.49 * 25 / 60


def test_gpu_candidates_with_counts_are_shown_and_the_first_is_used(client):
    job = client.jobs.run(command="true", gpu_type=["A100-80GB:2", "H100"], max_runtime_minutes=LONG)
    assert [(c.gpu_type, c.gpu_count) for c in job.gpu_candidates] == [("A100-80GB", 2), ("H100", 1)]
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert (job.gpu_type, job.gpu_count, job.cost_per_hour) == ("A100-80GB", 2, 3.28)


def test_rerun_starts_a_new_job_with_the_old_env(client):
    job = client.jobs.run(command='echo "$A$B"', gpu_type="A4000", max_runtime_minutes=LONG, env={"A": "1"})
    client.jobs.wait(job.id, poll_interval=0.05)
    again = client.jobs.rerun(job.id, env={"B": "2"})
    assert again.id != job.id and again.rerun_of == job.id
    assert "".join(c.text for c in client.jobs.follow_logs(again.id)) == "12\n"


def test_events_and_metrics_tell_the_story(client):
    job = client.jobs.run(command="sleep 0.2", gpu_type="L40S:2", max_runtime_minutes=LONG)
    client.jobs.wait(job.id, poll_interval=0.05)
    kinds = [e.kind for e in client.jobs.events(job.id)]
    assert kinds[:4] == ["created", "queued", "launch_attempt", "machine_up"]
    assert "started" in kinds and "exited" in kinds and kinds[-1] == "succeeded"
    points = client.jobs.metrics(job.id, step=60)
    assert points and all(len(p.gpus) == 2 for p in points)
    with pytest.raises(runcrate.UnprocessableEntityError):
        client.jobs.metrics(job.id, step=10)
