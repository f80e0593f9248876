"""`gpubench run --docker`: the container it asks the engine for, and its one-line word when there is no engine."""

from __future__ import annotations

import os
import socket
import time

import pytest
from docker.models.containers import _create_container_args

from gpubench.catalog import WORKLOADS
from gpubench.run.docker_run import DockerUnavailable, container_spec, is_orphan, parse_gpus, pump, run_in_docker
from gpubench.run_args import RunArgs

SDXL = WORKLOADS.get("sdxl")
IMAGE = "ghcr.io/gpubench/sdxl:0.1.0"


def spec_for(gpus="all", env=None):
    return container_spec(SDXL, RunArgs(workload="sdxl", setups=("eager-b1",)), image=IMAGE,
                          cache_volume="gpubench-cache", env=env or {"GPUBENCH_LAUNCHER": "docker"}, gpus=gpus)


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
    assert spec["environment"]["GPUBENCH_RESULTS_DIR"] == "/tmp/gpubench-results"  # copied out after the run


def test_container_shares_host_ipc_reaps_children_is_labelled_and_kept_until_its_exit_code_is_read():
    spec = spec_for()
    assert spec["ipc_mode"] == "host" and spec["init"] is True
    assert spec["auto_remove"] is False and "remove" not in spec and "detach" not in spec
    owner = spec["labels"].pop("io.gpubench.owner")
    assert spec["labels"] == {"io.gpubench": "1", "io.gpubench.workload": "sdxl", "io.gpubench.version": "0.1.0"}
    assert owner.split("/")[2] == str(os.getpid()) and not is_orphan(owner)  # host/boot id/pid/start time
    with_id = container_spec(SDXL, RunArgs(workload="sdxl", run_id="sdxl-20261130T000000Z-abcdef"), image=IMAGE,
                             cache_volume="c", env={})
    assert with_id["labels"]["io.gpubench.run-id"] == "sdxl-20261130T000000Z-abcdef"
    assert {u["Name"]: u["Soft"] for u in spec["ulimits"]} == {"memlock": -1, "stack": 67108864}


@pytest.mark.parametrize(("gpus", "count", "ids"), [("2", 2, []), (1, 1, []), ("0,2", 0, ["0", "2"]),
                                                   ("device=GPU-abc", 0, ["GPU-abc"]), ("device=0", 0, ["0"]),
                                                   ("GPU-abc", 0, ["GPU-abc"])])
def test_gpus_can_be_a_count_or_device_ids(gpus, count, ids):
    [request] = spec_for(gpus)["device_requests"]
    assert request["Count"] == count and request["DeviceIDs"] == ids
    assert request["Capabilities"] == [["gpu"]]


def test_no_gpus_asks_for_no_device():
    assert spec_for(gpus=None)["device_requests"] == []
    assert spec_for(gpus="none")["device_requests"] == []


@pytest.mark.parametrize(("gpus", "parsed"), [
    ("all", "all"), ("none", None), ("02", "2"), (" 0, 2 ", "device=0,2"), ("device=1", "device=1"),
    ("count=all", "all"), ("device=0,2", "device=0,2"), ("MIG-GPU-0c5e/1/0", "device=MIG-GPU-0c5e/1/0"),
    # docker's own spelling, a quoted list: docker run --gpus '"device=0,2",capabilities=utility'
    ('"device=0,2",capabilities=utility', "device=0,2,capabilities=utility"),
    ("2,capabilities=compute,utility", "2,capabilities=compute,utility"),
    ("capabilities=compute", "1,capabilities=compute"),
])
def test_gpus_values_are_normalised_and_read_back_the_same(gpus, parsed):
    assert parse_gpus(gpus) == parsed
    if parsed:
        assert parse_gpus(parsed) == parsed  # the CLI checks it, the container spec reads the checked value again


def test_capabilities_are_asked_for_with_gpu_as_docker_asks():
    [request] = spec_for('"device=0,2",capabilities=compute,utility')["device_requests"]
    assert request["DeviceIDs"] == ["0", "2"] and request["Capabilities"] == [["compute", "utility", "gpu"]]
    [request] = spec_for("2,capabilities=utility")["device_requests"]
    assert request["Count"] == 2 and request["Capabilities"] == [["utility", "gpu"]]


@pytest.mark.parametrize(("gpus", "why"), [
    (" , ", "no GPU named"), ("all,1", "all and other GPUs together"), ("device=", "device= with nothing after it"),
    ("none,0", "'none' is not a GPU index, GPU-<uuid> or MIG-<uuid>"),
    ("banana", "'banana' is not a GPU index, GPU-<uuid> or MIG-<uuid>"),
    ("device=banana", "'banana' is not a GPU index, GPU-<uuid> or MIG-<uuid>"),
    ("gpu=0", "unknown key 'gpu'"), ("count=2,device=0", "a count and device ids together"),
    ("count=two", "count 'two' is not all or a whole number"), ("device=0,device=1", "device given twice"),
    ("all,capabilities=cuda", "unknown capability 'cuda'"),
])
def test_bad_gpus_value_is_refused(gpus, why):
    with pytest.raises(ValueError) as refused:
        spec_for(gpus=gpus)
    assert str(refused.value) == f"--gpus {gpus!r}: {why}" + (
        " (known: compute, utility, graphics, video, display, compat32, all, gpu)" if "capability" in why else "") + (
        "; expected all, none, a count (2), device ids (0,2, device=0 or device=GPU-<uuid>),"
        " capabilities=compute,utility")


def test_zero_gpus_is_refused_as_ambiguous():
    with pytest.raises(ValueError, match="say --gpus none, or --gpus device=0"):
        parse_gpus("0")


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
        run_in_docker(SDXL, RunArgs(workload="sdxl"), image=IMAGE, cache_volume="gpubench-cache", env={},
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


def test_a_container_is_an_orphan_when_its_gpubench_is_gone_from_this_host():
    host, boot_id, pid, start_time = container_spec(SDXL, RunArgs(workload="sdxl"), image=IMAGE, cache_volume="c",
                                                    env={})["labels"]["io.gpubench.owner"].split("/")
    assert not is_orphan(f"{host}/{boot_id}/{pid}/{start_time}")
    assert is_orphan(f"{host}/{boot_id}/{pid}/{int(start_time) + 1}")  # the pid is another process's now
    assert is_orphan(f"{host}/{boot_id}/999999999/{start_time}")  # no such process
    assert is_orphan(f"{host}/an-earlier-boot/{pid}/{start_time}")
    assert not is_orphan(f"another-host/{boot_id}/999999999/1")  # a shared engine: not ours to judge
    assert not is_orphan("")
    assert not is_orphan(f"{host}/unknown/999999999/None")  # written where /proc is missing: nothing to compare


def test_the_container_runs_the_same_command_line_choices_as_the_host():
    given = RunArgs(workload="sdxl", setups=("eager-b1",), repeats=2, price=1.5, overrides=("steps=2",),
                    weights="random", run_id="r1", on_cpu=True)
    args = given.to_argv()
    assert args == ["run", "sdxl", "--setups", "eager-b1", "--repeats", "2", "--set", "steps=2", "--weights", "random",
                    "--price", "1.5", "--run-id", "r1", "--cpu"]
    assert RunArgs.from_argv(args) == given  # what the image's gpubench run reads back is what the host was given
    assert "--cpu" not in RunArgs(workload="sdxl", smoke=True, run_id="r1").to_argv()
