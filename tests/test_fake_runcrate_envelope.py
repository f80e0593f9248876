"""The fake's wire: envelope, auth, errors and validation, as the SDK and raw HTTP see them."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import httpx
import pytest
import runcrate
from fake_runcrate.pytest_fixtures import client, fake  # noqa: F401 - pytest fixtures
from runcrate import Runcrate

JOB = {"command": "true", "gpu_type": "A4000", "max_runtime_minutes": 600}


def test_answers_are_data_envelopes_with_json_content_type(fake, client):
    job = client.jobs.run(**JOB)
    raw = httpx.get(f"{fake.base_url}/api/v1/jobs", headers={"Authorization": f"Bearer {fake.api_key}"})
    assert raw.headers["content-type"] == "application/json"
    body = raw.json()
    assert [j["id"] for j in body["data"]] == [job.id]
    assert body["meta"] == {"cursor": None, "has_more": False, "total": 1}
    assert body["data"][0]["created_at"].endswith("Z")


def test_wrong_key_is_401(fake):
    with Runcrate(api_key="rc_live_not_the_key", base_url=fake.base_url) as wrong, \
            pytest.raises(runcrate.AuthenticationError) as caught:
        wrong.jobs.list()
    assert caught.value.status_code == 401
    assert caught.value.code == "unauthorized"


def test_missing_key_is_401_even_for_unknown_paths(fake):
    raw = httpx.get(f"{fake.base_url}/api/v1/nothing-here")
    assert raw.status_code == 401
    assert raw.json()["error"]["code"] == "unauthorized"


def test_unknown_ids_are_404(client):
    with pytest.raises(runcrate.NotFoundError):
        client.jobs.get("job_missing")
    with pytest.raises(runcrate.NotFoundError):
        client.instances.get("inst_missing")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"max_runtime_minutes": 0}, "max_runtime_minutes"),
        ({"max_runtime_minutes": 10081}, "max_runtime_minutes"),
        ({"gpu_count": 9}, "gpu_count"),
        ({"capacity_wait_minutes": 1441}, "capacity_wait_minutes"),
        ({"max_retries": 11}, "max_retries"),
        ({"gpu_type": "A4000:9"}, "gpu_type"),
        ({"gpu_type": ["H100", "TPUv9"]}, "gpu_type"),
    ],
)
def test_out_of_range_fields_are_422_validation_error(fake, client, change, field):
    with pytest.raises(runcrate.UnprocessableEntityError) as caught:
        client.jobs.run(**{**JOB, **change})
    assert caught.value.code == "validation_error"
    assert caught.value.details["field"] == field
    assert fake.jobs == {}


def test_gpu_names_are_accepted_in_their_other_spellings(client):
    job = client.jobs.run(**{**JOB, "gpu_type": "h100-sxm"})
    assert (job.gpu_type, job.gpu_count) == ("H100", 1)


def test_list_pages_with_a_string_cursor_newest_first(client):
    made = [client.jobs.run(**JOB, name=f"j{i}").id for i in range(5)]
    first = client.jobs.list(limit=2)
    assert [j.id for j in first] == made[::-1][:2]
    assert first.has_more and isinstance(first.cursor, str)
    assert [j.id for j in client.jobs.list_all()] == made[::-1]
    with pytest.raises(runcrate.UnprocessableEntityError):
        client.jobs.list(limit=101)


def test_list_filters_by_status_and_tags(client):
    tagged = client.jobs.run(**JOB, tags={"study": "s1"})
    client.jobs.run(**JOB, tags={"study": "s2"})
    assert [j.id for j in client.jobs.list(tags={"study": "s1"})] == [tagged.id]
    assert len(client.jobs.list(status=["queued", "starting", "running", "succeeded"])) == 2
    assert len(client.jobs.list(status="cancelled")) == 0


def test_environment_param_is_accepted_and_every_request_recorded(fake):
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url, environment="staging") as staged:
        staged.jobs.list()
    recorded = fake.requests[-1]
    assert (recorded.method, recorded.path) == ("GET", "/api/v1/jobs")
    assert recorded.query["environment"] == ["staging"]
    assert recorded.headers["authorization"] == f"Bearer {fake.api_key}"


def test_env_values_are_never_echoed(fake, client):
    job = client.jobs.run(**JOB, env={"HF_TOKEN": "hf_s3cret_value"})
    assert job.env_keys == ["HF_TOKEN"]
    client.jobs.wait(job.id, poll_interval=0.05)
    auth = {"Authorization": f"Bearer {fake.api_key}"}
    for path in (f"/api/v1/jobs/{job.id}", "/api/v1/jobs", f"/api/v1/jobs/{job.id}/events"):
        assert "hf_s3cret_value" not in httpx.get(fake.base_url + path, headers=auth).text
    assert any(b"hf_s3cret_value" in r.body for r in fake.requests)
