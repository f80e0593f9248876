"""Idempotency-Key replay on submit: a retried or repeated submit answers the same job."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import threading
import time

import pytest
from fake_runcrate.pytest_fixtures import client, fake  # noqa: F401 - pytest fixtures

JOB = {"command": "true", "gpu_type": "A4000", "max_runtime_minutes": 600}


def _submits(fake) -> list:
    return [r for r in fake.requests if (r.method, r.path) == ("POST", "/api/v1/jobs")]


def test_the_same_key_answers_the_same_job(fake, client):
    first = client.jobs.run(**JOB, idempotency_key="launch-1")
    again = client.jobs.run(**JOB, idempotency_key="launch-1")
    other = client.jobs.run(**JOB, idempotency_key="launch-2")
    assert again.id == first.id != other.id
    assert len(fake.jobs) == 2


@pytest.mark.parametrize(
    "fault",
    [{"status": 500}, {"status": 504}, {"status": None, "drop": True}],
    ids=["500", "504", "dropped answer"],
)
def test_a_lost_answer_after_the_job_was_made_is_retried_into_the_same_job(fake, client, fault):
    fake.inject("POST", "/api/v1/jobs", after_action=True, **fault)
    job = client.jobs.run(**JOB)
    assert list(fake.jobs) == [job.id]
    keys = [r.headers["idempotency-key"] for r in _submits(fake)]
    assert len(keys) == 2 and keys[0] == keys[1]


def test_a_second_submit_while_the_first_is_in_flight_waits_for_it(fake, client):
    fake.inject("POST", "/api/v1/jobs", None, delay_s=1.0)  # the first submit is slow
    answers: dict[str, str] = {}

    def submit(who: str) -> None:
        answers[who] = client.jobs.run(**JOB, idempotency_key="shared").id

    slow = threading.Thread(target=submit, args=("slow",))
    slow.start()
    time.sleep(0.2)
    started = time.monotonic()
    submit("second")  # gets 409 idempotency_in_progress, waits >= 3 s, then the replay
    slow.join()
    assert time.monotonic() - started >= 2.9
    assert answers["slow"] == answers["second"]
    assert len(fake.jobs) == 1
    assert len(_submits(fake)) == 3


def test_rerun_is_deduplicated_too(fake, client):
    job = client.jobs.run(**JOB)
    fake.inject("POST", r"/api/v1/jobs/[^/]+/rerun", 500, after_action=True)
    again = client.jobs.rerun(job.id)
    assert again.rerun_of == job.id
    assert len(fake.jobs) == 2


def test_instance_create_is_not_deduplicated(fake, client):
    import asyncssh

    key = client.ssh_keys.create(name="k", public_key=asyncssh.generate_private_key("ssh-ed25519")
                                 .export_public_key().decode())
    client.instances.create(name="a", ssh_key_id=key.id, gpu_type="A4000")
    client.instances.create(name="a", ssh_key_id=key.id, gpu_type="A4000")
    assert len(fake.instances) == 2
