"""Injected faults, and how the unmodified SDK's retry policy meets them."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import time

import asyncssh
import pytest
import runcrate
from fake_runcrate.pytest_fixtures import client, fake  # noqa: F401 - pytest fixtures
from runcrate import Runcrate

JOB = {"command": "true", "gpu_type": "A4000", "max_runtime_minutes": 600}


def _count(fake, method: str, path: str) -> int:
    return sum(1 for r in fake.requests if (r.method, r.path) == (method, path))


@pytest.fixture
def key_id(client) -> str:
    public = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    return client.ssh_keys.create(name="launcher", public_key=public).id


def test_429_with_retry_after_is_waited_out_and_retried(fake, client):
    job = client.jobs.run(**JOB)
    fake.inject("GET", r"/api/v1/jobs/[^/]+", 429, times=2, headers={"Retry-After": "0.3"})
    started = time.monotonic()
    assert client.jobs.get(job.id).id == job.id
    assert time.monotonic() - started >= 0.6
    assert _count(fake, "GET", f"/api/v1/jobs/{job.id}") == 3


def test_429_without_retry_after_backs_off_and_retries(fake, client):
    fake.inject("GET", "/api/v1/jobs", 429)
    started = time.monotonic()
    client.jobs.list()
    assert time.monotonic() - started >= 0.5
    assert _count(fake, "GET", "/api/v1/jobs") == 2


def test_a_429_that_lasts_raises_rate_limit_error(fake, client):
    fake.inject("GET", "/api/v1/jobs", 429, times=None, headers={"Retry-After": "0"})
    with pytest.raises(runcrate.RateLimitError):
        client.jobs.list()
    assert _count(fake, "GET", "/api/v1/jobs") == 4
    fake.clear_faults()
    client.jobs.list()


@pytest.mark.parametrize("created", [False, True], ids=["not created", "created anyway"])
def test_instance_create_500_is_not_retried(fake, client, key_id, created):
    fake.inject("POST", "/api/v1/instances", 500, code="provider_unavailable", delay_s=0.3,
                after_action=created)
    with pytest.raises(runcrate.InternalServerError) as caught:
        client.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S")
    assert caught.value.code == "provider_unavailable"
    assert _count(fake, "POST", "/api/v1/instances") == 1
    assert [i.name for i in client.instances.list()] == (["box"] if created else [])


def test_instance_create_503_is_retried_and_nothing_doubles(fake, client, key_id):
    fake.inject("POST", "/api/v1/instances", 503, times=2, headers={"Retry-After": "0"})
    client.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S")
    assert _count(fake, "POST", "/api/v1/instances") == 3
    assert len(client.instances.list()) == 1


def test_launch_refused_502_is_never_retried(fake, client, key_id):
    fake.inject("POST", "/api/v1/instances", 502, code="launch_refused", message="image too large")
    with pytest.raises(runcrate.ApiError) as caught:
        client.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S")
    assert (caught.value.status_code, caught.value.code) == (502, "launch_refused")
    assert _count(fake, "POST", "/api/v1/instances") == 1


def test_a_type_that_vanished_after_listing_is_400_no_longer_available(fake, client, key_id):
    listed = client.instances.list_types(gpu_type="RTX5090")[0]
    fake.instance_types[:] = [t for t in fake.instance_types if t["id"] != listed.id]
    with pytest.raises(runcrate.BadRequestError) as caught:
        client.instances.create(name="box", ssh_key_id=key_id, instance_type_id=listed.id)
    assert "no longer available" in caught.value.message
    assert fake.instances == {}


def test_no_capacity_for_an_instance_is_503_and_nothing_is_made(fake, key_id):
    fake.set_capacity("L40S", False)
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url, max_retries=1) as sdk, \
            pytest.raises(runcrate.ApiError) as caught:
        sdk.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S")
    assert (caught.value.status_code, caught.value.code) == (503, "no_capacity")
    assert _count(fake, "POST", "/api/v1/instances") == 2  # retried: a 503 says nothing was made
    assert fake.instances == {}


def test_budget_reached_is_402_and_no_job(fake, client):
    fake.inject("POST", "/api/v1/jobs", 402, code="BUDGET_REACHED", message="Monthly budget reached")
    with pytest.raises(runcrate.InsufficientCreditsError) as caught:
        client.jobs.run(**JOB)
    assert caught.value.code == "BUDGET_REACHED"
    assert fake.jobs == {}


def test_a_dropped_follow_read_is_retried_by_the_sdk(fake, client):
    job = client.jobs.run(command="echo hi", **{k: v for k, v in JOB.items() if k != "command"})
    fake.inject("GET", r"/api/v1/jobs/[^/]+/logs", None, drop=True)
    assert "".join(c.text for c in client.jobs.follow_logs(job.id)) == "hi\n"


def test_a_signed_url_that_fails_is_download_failed(fake, client):
    job = client.jobs.run(command='echo x > "$RUNCRATE_OUTPUT_DIR/a"', gpu_type="A4000", max_runtime_minutes=600)
    client.jobs.wait(job.id, poll_interval=0.05)
    fake.inject("GET", r"/signed/.+", 403, code="expired", message="Request has expired")
    with pytest.raises(runcrate.ApiError) as caught:
        client.jobs.artifacts.download(job.id, "a")
    assert (caught.value.status_code, caught.value.code) == (403, "download_failed")
    assert client.jobs.artifacts.download(job.id, "a") == b"x\n"
