"""`gpubench run --docker`: the container it asks the engine for, and its one-line word when there is no engine."""

from __future__ import annotations

import socket
import time

import pytest
from docker.models.containers import _create_container_args

from gpubench.catalog import WORKLOADS
from gpubench.docker_run import DockerUnavailable, container_spec, pump, run_in_docker

SDXL = WORKLOADS.get("sdxl")
IMAGE = "ghcr.io/gpubench/sdxl:0.1.0"


def spec_for(gpus="all", env=None):
    return container_spec(SDXL, ["run", "sdxl", "--setups", "eager-b1"], image=IMAGE, cache_volume="gpubench-cache",
                          env=env or {"GPUBENCH_LAUNCHER": "docker"}, gpus=gpus)


def test_container_runs_the_args_after_the_gpubench_entrypoint_with_every_gpu():
    spec = spec_for()
    assert spec["image"] == IMAGE
    assert spec["command"] == ["run", "sdxl", "--setups", "eager-b1"]
    [request] = spec["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]


def test_container_mounts_the_cache_volume_and_keeps_hf_home_on_it():
    spec = spec_for(env={"GPUBENCH_LAUNCHER": "docker", "HF_HOME": "/home/me/.cache/huggingface"})
    assert spec["volumes"] == {"gpubench-cache": {"bind": "/cache", "mode": "rw"}}
    assert spec["environment"]["HF_HOME"] == "/cache/huggingface"  # a host path means nothing in the container
    assert spec["environment"]["GPUBENCH_LAUNCHER"] == "docker"
    assert spec["environment"]["PYTHONUNBUFFERED"] == "1"  # records arrive as they are printed


def test_container_shares_host_ipc_reaps_children_is_labelled_and_kept_until_its_exit_code_is_read():
    spec = spec_for()
    assert spec["ipc_mode"] == "host" and spec["init"] is True
    assert spec["auto_remove"] is False and "remove" not in spec and "detach" not in spec
    assert spec["labels"] == {"io.gpubench": "1", "io.gpubench.workload": "sdxl", "io.gpubench.version": "0.1.0"}
    assert {u["Name"]: u["Soft"] for u in spec["ulimits"]} == {"memlock": -1, "stack": 67108864}


@pytest.mark.parametrize(("gpus", "count", "ids"), [("2", 2, []), (1, 1, []), ("0,2", 0, ["0", "2"]),
                                                   ("device=GPU-abc", 0, ["GPU-abc"])])
def test_gpus_can_be_a_count_or_device_ids(gpus, count, ids):
    [request] = spec_for(gpus)["device_requests"]
    assert request["Count"] == count and request["DeviceIDs"] == ids
    assert request["Capabilities"] == [["gpu"]]


def test_no_gpus_asks_for_no_device():
    assert spec_for(gpus=None)["device_requests"] == []


def test_bad_gpus_value_is_refused():
    with pytest.raises(ValueError, match="expected 'all', a count, or device ids"):
        spec_for(gpus=" , ")


def test_docker_sdk_accepts_the_spec_for_create_and_run():
    """docker-py's own conversion (no engine involved): an unknown key would raise TypeError here."""
    create = _create_container_args({**spec_for(), "version": "1.44"})
    host = create["host_config"]
    assert create["image"] == IMAGE and create["volumes"] == ["/cache"]
    assert host["Binds"] == ["gpubench-cache:/cache:rw"]
    assert host["DeviceRequests"][0]["Count"] == -1
    assert host["IpcMode"] == "host" and host["Init"] is True and not host.get("AutoRemove")


def test_no_engine_is_one_line_that_suggests_running_without_docker(tmp_path, monkeypatch):
    closed = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(closed))
    listener.close()  # the socket file stays; nothing listens on it
    monkeypatch.setenv("DOCKER_HOST", f"unix://{closed}")
    lines = []
    started = time.monotonic()
    with pytest.raises(DockerUnavailable) as caught:
        run_in_docker(SDXL, ["run", "sdxl"], image=IMAGE, cache_volume="gpubench-cache", env={},
                      on_stdout_line=lines.append, on_stderr_line=lines.append)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400
    assert message.startswith(f"no Docker engine reachable at unix://{closed} (")
    assert message.endswith("; run without --docker to use this Python environment")
    assert "Connection refused" in message
    assert lines == [] and time.monotonic() - started < 10


def test_output_is_streamed_as_lines_per_stream_whatever_the_chunking():
    out, err = [], []
    chunks = [(b'{"record": 1}\n{"rec', None), (None, b"warn"), (b'ord": 2}\r\n', b"ing: x\npartial"),
              (b"\xff tail", None)]
    pump(chunks, out.append, err.append)
    assert out == ['{"record": 1}', '{"record": 2}', "\ufffd tail"]
    assert err == ["warning: x", "partial"]
