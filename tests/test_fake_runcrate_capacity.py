"""Capacity and machine failures: candidate fallback, queueing for capacity, retries."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

from fake_runcrate.pytest_fixtures import client, fake, wait_until  # noqa: F401 - pytest fixtures

LONG = 600


def test_a_job_falls_back_to_the_next_candidate_with_capacity(fake, client):
    fake.set_capacity("H100", False)
    job = client.jobs.run(command="true", gpu_type=["H100", "L40S"], max_runtime_minutes=LONG)
    assert job.gpu_type == "H100"  # the first candidate, until it has a machine
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert (job.status, job.gpu_type, job.cost_per_hour) == ("succeeded", "L40S", 0.86)


def test_no_capacity_queues_then_fails_after_capacity_wait(fake, client):
    fake.set_capacity("H100", False)
    job = client.jobs.run(command="true", gpu_type="H100", max_runtime_minutes=LONG, capacity_wait_minutes=10)
    queued = wait_until(lambda: (j := client.jobs.get(job.id)).queue_reason == "no_capacity" and j)
    assert queued.status == "queued" and queued.next_attempt_at is not None
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert job.status == "failed" and job.exit_code is None and "capacity" in job.error
    assert job.cost_usd is None  # queued time is not billed


def test_a_queued_job_starts_when_capacity_returns(fake, client):
    fake.set_capacity("A4000", False)
    job = client.jobs.run(command="true", gpu_type="A4000", max_runtime_minutes=LONG, capacity_wait_minutes=600)
    wait_until(lambda: client.jobs.get(job.id).queue_reason == "no_capacity")
    fake.set_capacity("A4000", True)
    assert client.jobs.wait(job.id, poll_interval=0.05).status == "succeeded"


def test_a_machine_failure_is_retried_on_a_new_machine(fake, client):
    job = client.jobs.run(command='echo "try $RUNCRATE_JOB_ATTEMPT"; sleep 0.5', gpu_type="A4000",
                          max_runtime_minutes=LONG, max_retries=1)
    wait_until(lambda: client.jobs.get(job.id).status == "running")
    first_machine = client.jobs.get(job.id).instance_id
    fake.fail_machine(job.id)
    retried = client.jobs.get(job.id)
    assert retried.attempt == 2 and retried.status in ("queued", "starting", "running")
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert job.status == "succeeded" and job.instance_id != first_machine
    assert [(a.attempt, a.status, a.error) for a in job.attempts] == [
        (1, "failed", "machine failure"), (2, "succeeded", None)]
    assert "".join(c.text for c in client.jobs.follow_logs(job.id)) == "try 1\ntry 2\n"
    assert job.cost_usd > job.attempts[1].cost_usd  # both machines are billed


def test_a_machine_failure_without_retries_fails_with_no_exit_code(fake, client):
    job = client.jobs.run(command="sleep 30", gpu_type="A4000", max_runtime_minutes=LONG)
    wait_until(lambda: client.jobs.get(job.id).status == "running")
    fake.fail_machine(job.id)
    job = client.jobs.get(job.id)
    assert (job.status, job.exit_code) == ("failed", None)
    assert "machine failure" in job.error


def test_nonzero_exit_is_retried_only_when_asked(client):
    job = client.jobs.run(command='[ "$RUNCRATE_JOB_ATTEMPT" = 2 ] || exit 7', gpu_type="A4000",
                          max_runtime_minutes=LONG, max_retries=2, retry_on=["nonzero_exit"], retry_exit_codes=[7])
    job = client.jobs.wait(job.id, poll_interval=0.05)
    assert (job.status, job.attempt, job.attempts[0].exit_code) == ("succeeded", 2, 7)
