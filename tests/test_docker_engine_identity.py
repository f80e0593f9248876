"""The docker run mounts the cache volume at /cache and records the image's identity in its environment block."""

import pytest
from docker_engine import engine_or_reason, smoke_run


@pytest.fixture(scope="module")
def run():
    docker_run = smoke_run()
    assert docker_run["result"].code == 0, docker_run["result"].stderr[-3000:]
    client, reason = engine_or_reason()
    assert client, reason
    yield docker_run, client  # docker_engine removes the volume at exit
    client.close()


def test_the_engine_mounted_the_named_cache_volume_at_cache_in_the_runs_container(run):
    docker_run, client = run
    events = list(client.events(since=int(docker_run["started"]), until=int(docker_run["ended"]), decode=True,
                                filters={"type": ["container", "volume"]}))
    [started] = [e["Actor"]["ID"] for e in events if e["Type"] == "container" and e["Action"] == "start"
                 and e["Actor"]["Attributes"].get("io.gpubench.run-id") == docker_run["run_id"]]
    mounts = [e["Actor"]["Attributes"] for e in events if e["Type"] == "volume" and e["Action"] == "mount"
              and e["Actor"]["ID"] == docker_run["volume"]]
    assert {"container": started, "destination": "/cache", "read/write": "true"}.items() <= mounts[-1].items()
    assert client.volumes.get(docker_run["volume"]).attrs["Driver"] == "local"


def test_the_environment_block_names_the_image_it_ran_in(run):
    docker_run, client = run
    image = docker_run["image"]
    env = docker_run["result"].records()[0]["environment"]
    assert env["image"] == image["GPUBENCH_IMAGE"] == "gpubench-test/train-compile"
    assert env["image_version"] == image["GPUBENCH_IMAGE_VERSION"] and env["image_version"].startswith("test-")
    assert env["git_commit"] == image["GPUBENCH_GIT_COMMIT"]
    assert env["image_digest"] == client.images.get(image["tag"]).id  # a local image: the engine's id for it
    assert env["launcher"] == "docker"
    assert env["python"].startswith("3.11.") and env["libraries"]["torch"].startswith("2.13.0")
