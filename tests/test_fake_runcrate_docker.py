"""With ``run_images``, a job whose image the local Docker engine has runs in a container of it
(tests/fake_runcrate/docker_job.py): in /workspace with the job's env, output combined, its exit code, cancel as
SIGTERM first, nothing left behind. A job whose image is not there (or a fake without ``run_images``) runs with
bash on this machine, as before."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import shlex

import docker_engine
import pytest
from fake_runcrate import FakeRuncrate
from fake_runcrate.docker_job import LABEL
from fake_runcrate.pytest_fixtures import FAST, client, wait_until  # noqa: F401 - pytest fixtures

LONG = 10080  # API minutes: a safety net of 8 minutes at the test speed (a container start is slow on busy cores)


@pytest.fixture(params=[True])
def fake(request):
    """The fake, fast, running jobs in their images when the engine has them (``run_images``)."""
    with FakeRuncrate(**FAST, run_images=request.param) as running:
        yield running


@pytest.fixture(scope="module")
def engine():
    client, reason = docker_engine.engine_or_reason()
    if client is None:
        pytest.skip(reason)
    yield client
    client.close()


@pytest.fixture(scope="module")
def debian(engine) -> str:
    """The stand-in image's base: Debian's minbase, bash in it, root its user."""
    return docker_engine.base_image(engine)


def containers_of(engine, fake) -> list:
    return engine.containers.list(all=True, filters={"label": f"{LABEL}={fake.workspace_root}"})


def output(client, job_id: str) -> str:
    return "".join(chunk.text for chunk in client.jobs.follow_logs(job_id))


# The fake's own API on loopback, from inside the container (host network): 401 without a key.
LOOPBACK = """import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1])
except urllib.error.HTTPError as error:
    print("loopback answered", error.code)"""


def test_a_job_in_a_present_image_runs_in_its_container_and_fails_with_its_exit_code(fake, client, engine, debian):
    job = client.jobs.run(
        command='echo "$GREETING $RUNCRATE_JOB_ATTEMPT in $PWD, outputs $RUNCRATE_OUTPUT_DIR,'
                ' ${FAKE_RUNCRATE_MACHINE:-no host marker}"; echo to-stderr >&2;'
                ' head -c 12 /proc/1/cmdline | tr "\\0" " "; echo;'
                f' python3 -c {shlex.quote(LOOPBACK)} {fake.base_url}/api/v1/jobs;'
                ' echo data > "$RUNCRATE_OUTPUT_DIR/r.txt"; exit 3',
        image=debian, gpu_type="L40S", max_runtime_minutes=LONG, env={"GREETING": "hello"})
    job = client.jobs.wait(job.id, poll_interval=0.1)
    assert (job.status, job.exit_code) == ("failed", 3)
    lines = output(client, job.id).splitlines()
    assert "to-stderr" in lines  # stderr in the same stream (where in it, the engine's two copiers decide)
    stdout = [line for line in lines if line != "to-stderr"]
    assert stdout[0] == "hello 1 in /workspace, outputs /workspace/outputs, no host marker"
    assert stdout[1] == "bash -c echo"  # the command is the container's first process, not the entrypoint
    assert stdout[2:] == ["loopback answered 401"]
    assert [(a.path, a.bytes) for a in client.jobs.artifacts.list(job.id)] == [("r.txt", 5)]
    assert not containers_of(engine, fake)


def test_cancel_stops_the_container_with_sigterm_first_and_removes_it(fake, client, engine, debian):
    job = client.jobs.run(
        command="trap 'echo got SIGTERM; exit 143' TERM; echo ready; sleep 600 & wait",
        image=debian, gpu_type="L40S", max_runtime_minutes=LONG)
    wait_until(lambda: "ready" in "".join(c.text for c in client.jobs.logs(job.id).chunks), timeout_s=300)
    [container] = containers_of(engine, fake)
    assert container.labels[f"{LABEL}.job"] == job.id and container.status == "running"

    assert client.jobs.cancel(job.id).status == "cancelled"
    assert output(client, job.id).splitlines() == ["ready", "got SIGTERM"]
    assert not containers_of(engine, fake)


def test_a_job_whose_image_is_not_present_runs_with_bash(fake, client):
    job = client.jobs.run(command='echo "$RUNCRATE_OUTPUT_DIR"', image="gpubench-test/not-built:never",
                          gpu_type="L40S", max_runtime_minutes=LONG)
    job = client.jobs.wait(job.id, poll_interval=0.1)
    assert job.status == "succeeded"
    assert output(client, job.id) == f"{fake.jobs[job.id].attempt.workspace / 'outputs'}\n"


@pytest.mark.parametrize("fake", [False], indirect=True)
def test_without_run_images_a_present_image_still_runs_with_bash(fake, client, engine, debian):
    job = client.jobs.run(command='echo "$RUNCRATE_OUTPUT_DIR"', image=debian, gpu_type="L40S",
                          max_runtime_minutes=LONG)
    job = client.jobs.wait(job.id, poll_interval=0.1)
    assert job.status == "succeeded"
    assert output(client, job.id) == f"{fake.jobs[job.id].attempt.workspace / 'outputs'}\n"
