"""`gpubench-launch NAME --docker-host URL` and a sweep plan's [docker] table, against a real Docker engine (the
stand-in image of tests/docker_engine.py), reached over its unix socket and over ssh:// through an OpenSSH server on
localhost (tests/sshd.py): the image runs with the host's GPUs (none here: --smoke on its CPU), its records stream
into the run folder and the store, and nothing is left running; a sweep's container that a killed launcher left is
followed again by the next call, Ctrl-C stops what runs, and status, cancel and cleanup find a run by its id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import docker_engine
import pytest
import sshd
from test_launch_support import launcher_process, read_until

from gpubench import exit_codes

BIN = os.path.dirname(sys.executable)
ENGINE = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"  # the engine docker_engine builds on
SMOKE = ["--smoke", "--setups", "eager-sdpa"]
ENDLESS = [*SMOKE, "--set", "timed_steps=100000"]  # still running when it is stopped


@pytest.fixture(scope="module")
def image() -> str:
    return docker_engine.stand_in_image()["tag"]  # skips, saying why, without an engine or debootstrap


@pytest.fixture
def engine():
    client, reason = docker_engine.engine_or_reason()
    if client is None:
        pytest.skip(reason)
    yield client
    client.close()


@pytest.fixture(scope="module")
def ssh_server():
    reason = sshd.missing()
    if reason:
        pytest.skip(f"no ssh:// Docker host: {reason}")
    server = sshd.start(ENGINE)
    yield server
    server.stop()


def env(tmp_path, extra: dict[str, str] | None = None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_", "DOCKER_"))}
    return {**clean, "GPUBENCH_STATE_DIR": str(tmp_path / "state"), "GPUBENCH_POLL_S": "0.5", **(extra or {})}


def launch(args: list[str], tmp_path, extra: dict[str, str] | None = None, timeout: float = 600):
    return subprocess.run([f"{BIN}/gpubench-launch", *args], cwd=tmp_path, env=env(tmp_path, extra), text=True,
                          capture_output=True, timeout=timeout)


def records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def ours(engine, **labels: str) -> list:
    wanted = ["io.gpubench.launcher"] + [f"io.gpubench.{k.replace('_', '-')}={v}" for k, v in labels.items()]
    return engine.containers.list(all=True, filters={"label": wanted})


def of_sweep(engine, name: str) -> list:
    """The containers of the sweep whose plan is named `name` (its id is the name and a hash)."""
    return [c for c in ours(engine) if c.labels.get("io.gpubench.sweep", "").startswith(f"{name}-")]


def plan(tmp_path, name: str, image: str, cells: list[tuple[list[str], list[str]]]) -> str:
    lines = [f"name = {json.dumps(name)}", "[docker]", "max_gpu_hours = 4.0", "[docker.gpus]",
             f"L40S = {{ host = {json.dumps(ENGINE)} }}", f"H100 = {{ host = {json.dumps(ENGINE)} }}"]
    for gpus, args in cells:
        lines += ["[[cell]]", 'workload = "train-compile"', f"gpus = {json.dumps(gpus)}", f"args = {json.dumps(args)}",
                  f"image = {json.dumps(image)}"]
    path = tmp_path / "plan.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_smoke_run_over_the_unix_socket_streams_and_stores(image, engine, s3, s3_bucket, tmp_path):
    done = launch(["train-compile", "--docker-host", ENGINE, *SMOKE, "--image", image, "--store",
                   f"s3://{s3_bucket}/runs"], tmp_path, s3.env())
    assert done.returncode == exit_codes.OK, done.stderr
    assert "has no GPU runtime: --smoke runs on its CPU" in done.stderr
    [run_id] = {r["run_id"] for r in records(done.stdout)}
    folder = tmp_path / "gpubench-results" / run_id
    stored = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert stored == records(done.stdout) and stored[-1]["status"] == "ok"  # streamed = kept
    facts = json.loads((folder / "job.json").read_text())
    assert (facts["provider"], facts["status"], facts["exit_code"], facts["host"], facts["gpus"]) == (
        "docker", "succeeded", 0, ENGINE, "none")
    assert json.loads((folder / "config.json").read_text())["docker"]["provider"] == "docker"  # the image's own
    keys = {o["Key"] for o in s3.client().list_objects_v2(Bucket=s3_bucket, Prefix=f"runs/{run_id}/")["Contents"]}
    assert {f"runs/{run_id}/{name}" for name in ("results.jsonl", "job.json", "config.json", "run.log")} <= keys
    assert ours(engine, run_id=run_id) == []  # removed once its results were read
    assert not list((tmp_path / "state" / "launches").glob("*.json"))

    status = launch(["status", run_id], tmp_path)  # the container is gone: its job.json answers
    assert status.returncode == exit_codes.OK, status.stderr
    assert "status     succeeded" in status.stdout and f"on {ENGINE} (removed)" in status.stdout


def test_a_smoke_run_over_ssh(image, engine, ssh_server, tmp_path):
    url = ssh_server.url()
    done = launch(["train-compile", "--docker-host", url, *SMOKE, "--image", image], tmp_path,
                  {"HOME": str(ssh_server.home)})  # the client's key and known_hosts
    assert done.returncode == exit_codes.OK, done.stderr
    [run_id] = {r["run_id"] for r in records(done.stdout)}
    assert records(done.stdout)[-1]["status"] == "ok"
    facts = json.loads((tmp_path / "gpubench-results" / run_id / "job.json").read_text())
    assert (facts["host"], facts["status"]) == (url, "succeeded")
    assert ours(engine, run_id=run_id) == []


def test_an_unreachable_host_is_one_line_and_nothing_is_written(tmp_path):
    done = launch(["train-compile", "--docker-host", f"unix://{tmp_path}/nothing.sock", *SMOKE], tmp_path)
    assert done.returncode == exit_codes.BAD_INPUT
    assert done.stderr.count("\n") == 1 and "no Docker engine reachable at unix://" in done.stderr
    assert not (tmp_path / "gpubench-results").exists()


def test_a_sweep_follows_the_container_a_killed_launcher_left(image, engine, tmp_path):
    name = f"resume{os.getpid()}"
    path = plan(tmp_path, name, image, [(["L40S"], [*SMOKE, "--set", "timed_steps=150"]), (["H100"], SMOKE)])
    proc = launcher_process(["sweep", path], env(tmp_path), tmp_path)
    try:
        read_until(proc.stdout, lambda line: '"kind":"progress"' in line and '"phase":"timed"' in line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    [left] = of_sweep(engine, name)
    run_id = left.labels["io.gpubench.run-id"]
    assert left.status == "running"  # the container runs on without a launcher

    status = launch(["status", run_id], tmp_path)  # found on the host its state file names
    assert status.returncode == exit_codes.OK, status.stderr
    assert f"container  {left.short_id} (gpubench-{run_id}) on {ENGINE}" in status.stdout, status.stdout

    resumed = launch(["sweep", path], tmp_path)
    assert resumed.returncode == exit_codes.OK, resumed.stderr
    assert "followed again" in resumed.stderr and resumed.stderr.count(" started on ") == 1  # the H100 cell only
    summary = json.loads(next((tmp_path / "gpubench-results").glob("*/sweep.json")).read_text())
    assert [c["state"] for c in summary["cells"]] == ["done", "done"]
    assert run_id in {c["run_id"] for c in summary["cells"]}
    [folder] = (tmp_path / "gpubench-results").glob(f"*/*/*/*/{run_id}")
    results = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in results].count("run_started") == 1 and results[-1]["status"] == "ok"  # read once
    assert of_sweep(engine, name) == []

    again = launch(["sweep", path], tmp_path)
    assert again.returncode == exit_codes.OK, again.stderr
    assert " started on " not in again.stderr and again.stderr.count(": done (stored run") == 2


def test_ctrl_c_stops_the_sweeps_container_and_keeps_what_it_measured(image, engine, tmp_path):
    name = f"ctrlc{os.getpid()}"
    path = plan(tmp_path, name, image, [(["L40S"], ENDLESS)])
    proc = launcher_process(["sweep", path], env(tmp_path), tmp_path)
    try:
        read_until(proc.stdout, lambda line: '"kind":"progress"' in line and '"phase":"timed"' in line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_codes.INTERRUPTED, err
    assert of_sweep(engine, name) == []
    [results] = (tmp_path / "gpubench-results").glob("*/*/*/*/*/results.jsonl")
    last = json.loads(results.read_text().splitlines()[-1])
    assert last["kind"] == "run_finished" and last["status"] == "interrupted"  # SIGINT first: the run stored it
    facts = json.loads((results.parent / "job.json").read_text())
    assert facts["stopped_by"] == "interrupt" and facts["cancel_confirmed"] is True
    assert not list((tmp_path / "state" / "launches").glob("*.json"))


def test_cancel_and_cleanup_stop_a_killed_launchers_containers(image, engine, tmp_path):
    runs = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        proc = launcher_process(["train-compile", "--docker-host", ENGINE, *ENDLESS, "--image", image],
                                env(tmp_path), tmp_path / folder)
        try:
            lines = read_until(proc.stdout, lambda line: '"kind":"progress"' in line and '"phase":"timed"' in line)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
        runs.append(json.loads(lines[0])["run_id"])
    first, second = runs
    assert all(c.status == "running" for run_id in runs for c in ours(engine, run_id=run_id))

    cancelled = launch(["cancel", first], tmp_path)
    assert cancelled.returncode == exit_codes.OK, cancelled.stderr
    assert cancelled.stderr.startswith("gpubench-launch: container ") and cancelled.stderr.strip().endswith("stopped")
    [stopped] = ours(engine, run_id=first)
    assert stopped.status == "exited"  # stopped, and kept: its output is there for `logs` (no launcher read it)
    assert "eager-sdpa" in launch(["logs", first], tmp_path).stdout

    listing = launch(["cleanup", "--dry-run"], tmp_path)
    assert listing.returncode == exit_codes.OK, listing.stderr
    assert "would remove: DOCKER_HOST=" in next(ln for ln in listing.stdout.splitlines() if first in ln)
    assert "would stop and remove: " in next(ln for ln in listing.stdout.splitlines() if second in ln)
    cleaned = launch(["cleanup"], tmp_path)
    assert cleaned.returncode == exit_codes.OK, cleaned.stderr
    assert next(ln for ln in cleaned.stdout.splitlines() if second in ln).endswith(" stopped and removed")
    assert ours(engine, run_id=first) == ours(engine, run_id=second) == []
    assert not list((tmp_path / "state" / "launches").glob("*.json"))
    assert "no gpubench container on" in launch(["cleanup"], tmp_path, {"DOCKER_HOST": ENGINE}).stdout
    nowhere = launch(["cleanup"], tmp_path)  # no key, no Slurm, no host known: it says what it would need
    assert nowhere.returncode == exit_codes.BAD_INPUT and "no provider can be reached from here" in nowhere.stderr
