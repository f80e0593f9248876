"""A launch end to end on a real engine: `gpubench-launch train-compile --smoke` against the fake Runcrate,
which runs the job in the small test image on the local Docker engine (tests/fake_runcrate/docker_job.py);
the records stream through the launcher into SeaweedFS. Nothing is left behind: no container, no live job,
no instance, no launch for cleanup to find; after Ctrl-C neither, and what was measured is kept."""

from __future__ import annotations

import json
import signal

import docker_engine
import pytest
import test_launch_support as support
from fake_runcrate.docker_job import LABEL
from test_launch_support import API_KEY, LAUNCHER_PACE, launcher_process, read_until, run_folders, secret_texts

fake = support.fake
# One API minute is 20 s: the launcher's safety net (31 minutes) is 10 minutes of real time, a generous one
# (the streaming test took 60 to 145 s on two cores at a load of 10 to 15).
SLOW = [{"minute_s": 20.0, "run_images": True}]


@pytest.fixture(scope="module")
def image() -> dict[str, str]:
    return docker_engine.stand_in_image()  # skips, saying why, without an engine or debootstrap


@pytest.fixture
def engine():
    client, reason = docker_engine.engine_or_reason()
    if client is None:
        pytest.skip(reason)
    yield client
    client.close()


def start_launch(fake, s3, image, bucket: str, tmp_path, repeats: int):
    env = {"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
           "GPUBENCH_STATE_DIR": str(tmp_path / "state"), **LAUNCHER_PACE, **s3.env()}
    args = ["train-compile", "--gpu", "L40S", "--smoke", "--setups", "eager-sdpa", "--repeats", str(repeats),
            "--image", image["tag"], "--store", f"s3://{bucket}/runs"]
    return launcher_process(args, env, tmp_path)


def running_container(engine, fake):
    """The one job and its container, which must be running now."""
    [job] = fake.jobs.values()
    running = engine.containers.list(filters={"label": f"{LABEL}.job={job.id}", "status": "running"})
    assert running, f"the job's container is no longer running (job {job.status})"
    return job, running[0]


def nothing_left(engine, fake, tmp_path) -> None:
    assert not engine.containers.list(all=True, filters={"label": f"{LABEL}={fake.workspace_root}"})
    assert not [job.id for job in fake.jobs.values() if job.live]
    assert not fake.instances
    assert not list((tmp_path / "state" / "launches").glob("*.json"))  # nothing for `gpubench-launch cleanup`


def stored_objects(s3, bucket: str) -> dict[str, str]:
    client = s3.client()
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode() for o in listed}


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_results_stream_live_from_the_container_and_land_once_in_s3(fake, image, engine, s3, s3_bucket, tmp_path):
    proc = start_launch(fake, s3, image, s3_bucket, tmp_path, repeats=2)
    try:
        arrived = read_until(proc.stdout, lambda line: '"kind":"result"' in line.replace(" ", ""))
        # The first result is on the launcher's stdout while the job's container still runs the second repeat.
        job, _ = running_container(engine, fake)
        assert job.status == "running"
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert job.status == "succeeded"

    lines = [line.rstrip("\n") for line in arrived] + out.splitlines()
    records = [json.loads(line) for line in lines]
    run_id = records[0]["run_id"]
    assert [r["kind"] for r in records if r["kind"] != "progress"] == ["run_started", "result", "result",
                                                                        "run_finished"]
    assert [(r["setup"], r["repeat"], r["status"]) for r in records if r["kind"] == "result"] == [
        ("eager-sdpa", 1, "ok"), ("eager-sdpa", 2, "ok")]
    environment = records[0]["environment"]  # measured in the image, not on this machine
    assert (environment["image"], environment["image_version"]) == (image["GPUBENCH_IMAGE"],
                                                                    image["GPUBENCH_IMAGE_VERSION"])

    stored = stored_objects(s3, s3_bucket)
    assert sorted(stored) == [f"runs/{run_id}/{name}" for name in ("config.json", "job.json", "results.jsonl",
                                                                   "run.log")]
    [folder] = run_folders(tmp_path)
    assert stored[f"runs/{run_id}/results.jsonl"] == (folder / "results.jsonl").read_text() == "\n".join(lines) + "\n"
    facts = json.loads(stored[f"runs/{run_id}/job.json"])
    assert facts["status"] == "succeeded" and facts["exit_code"] == 0
    assert f"gpubench-results/{run_id}/results.jsonl" in {a["path"] for a in facts["artifacts"]}
    nothing_left(engine, fake, tmp_path)

    scanned = secret_texts(fake, out, err, folders=[folder], objects=stored.values())
    for secret in (API_KEY, s3.secret_key):
        assert not [t for t in scanned if secret in t]


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_ctrl_c_cancels_the_job_removes_its_container_and_keeps_what_was_measured(
        fake, image, engine, s3, s3_bucket, tmp_path):
    proc = start_launch(fake, s3, image, s3_bucket, tmp_path, repeats=3)
    try:
        arrived = read_until(proc.stdout, lambda line: '"kind":"result"' in line.replace(" ", ""))
        job, container = running_container(engine, fake)
        container.pause()  # it cannot end on its own now: the Ctrl-C surely finds it running
        # What it measured before the pause (on busy cores a second repeat may have ended meanwhile): all to be kept.
        printed = [(r["setup"], r["repeat"]) for line in container.logs(stderr=False).decode().splitlines()
                   if line.startswith("{") and (r := json.loads(line)).get("kind") == "result"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert job.status == "cancelled"
    assert "cancelled (interrupted)" in err

    [folder] = run_folders(tmp_path)
    kept = (folder / "results.jsonl").read_text()
    records = [json.loads(line) for line in kept.splitlines()]
    assert [line.rstrip("\n") for line in arrived] == kept.splitlines()[:len(arrived)]
    kept_results = [(r["setup"], r["repeat"]) for r in records if r["kind"] == "result"]
    # Nothing measured is lost (a line still on its way into the engine's log when it paused comes later, from the
    # log or the job's artifacts), nothing is doubled, and the paused run never reached its third repeat.
    assert printed and kept_results[:len(printed)] == printed
    assert kept_results == [("eager-sdpa", repeat) for repeat in range(1, len(kept_results) + 1)]
    assert len(kept_results) < 3
    run_id = records[0]["run_id"]
    stored = stored_objects(s3, s3_bucket)
    assert stored[f"runs/{run_id}/results.jsonl"] == kept
    facts = json.loads(stored[f"runs/{run_id}/job.json"])
    assert facts["stopped_by"] == "interrupt" and facts["cancel_confirmed"] is True
    assert facts["status"] == "cancelled"
    nothing_left(engine, fake, tmp_path)
