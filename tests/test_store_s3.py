"""Results to S3 (a real SeaweedFS server): uploaded, verified, idempotent, never leaking the secret."""

import hashlib
import json
import os
import subprocess
import threading
import time

import s3server
from clirun import BIN, base_env, gpubench

SMOKE = ("run", "train-compile", "--smoke", "--setups", "eager-sdpa")
RUN_FILES = ("results.jsonl", "config.json", "run.log", "summary.md", "summary.csv")


def _objects(s3, bucket):
    client = s3.client()
    listing = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listing}


def test_a_run_uploads_its_folder_and_the_objects_match_byte_for_byte(tmp_path, s3, s3_bucket):
    result = gpubench(*SMOKE, "--store", f"s3://{s3_bucket}/team/runs", cwd=tmp_path, env=s3.env())
    assert result.code == 0, result.stderr[-2000:]
    run_id = result.records()[0]["run_id"]
    folder = tmp_path / "gpubench-results" / run_id
    objects = _objects(s3, s3_bucket)
    assert set(objects) == {f"team/runs/{run_id}/{name}" for name in RUN_FILES}
    for key, body in objects.items():
        assert body == (folder / key.rsplit("/", 1)[1]).read_bytes()
        head = s3.client().head_object(Bucket=s3_bucket, Key=key)
        assert head["Metadata"]["sha256"] == hashlib.sha256(body).hexdigest()
    state = json.loads((folder / "upload.json").read_text())
    assert state["status"] == "done" and state["store"] == f"s3://{s3_bucket}/team/runs"
    assert f"uploaded {len(RUN_FILES)} files" in result.stderr


def test_uploading_again_changes_nothing(tmp_path, s3, s3_bucket):
    result = gpubench(*SMOKE, "--store", f"s3://{s3_bucket}", cwd=tmp_path, env=s3.env())
    run_id = result.records()[0]["run_id"]
    client = s3.client()
    before = {o["Key"]: o["LastModified"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    time.sleep(1.1)  # LastModified has one-second resolution
    again = gpubench("upload", str(tmp_path / "gpubench-results" / run_id), cwd=tmp_path, env=s3.env())
    assert again.code == 0, again.stderr
    after = {o["Key"]: o["LastModified"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    assert after == before


def test_a_store_that_refuses_writes_is_found_before_anything_runs(tmp_path, s3, s3_bucket):
    result = gpubench(*SMOKE, "--store", f"s3://{s3_bucket}/x", cwd=tmp_path, env=s3.readonly_env())
    assert result.code == 2
    assert result.stderr.startswith(f"gpubench: error: cannot write to s3://{s3_bucket}/x: AccessDenied")
    assert not (tmp_path / "gpubench-results").exists()
    assert _objects(s3, s3_bucket) == {}


def test_a_failed_upload_keeps_the_run_and_gpubench_upload_sends_it_later(tmp_path, s3):
    # A store of our own that goes away mid-run: the preflight passes, the final upload cannot.
    bucket = f"results-{os.getpid()}-{time.monotonic_ns() % 10**6}"  # a name no earlier run used on the shared server
    doomed = s3server.start()
    try:
        doomed.make_bucket(bucket)
        proc = subprocess.Popen([str(BIN / "gpubench"), *SMOKE, "--store", f"s3://{bucket}/p"], cwd=tmp_path,
                                env=base_env(doomed.env()), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = proc.stdout.readline()  # run_started is printed after the store's write check
        assert json.loads(first)["kind"] == "run_started"
    finally:
        doomed.stop()
    # Not communicate(): it reads the pipes' file descriptors and would skip what readline() already buffered.
    stderr_text = []
    drain = threading.Thread(target=lambda: stderr_text.append(proc.stderr.read()))
    drain.start()
    rest = proc.stdout.read()
    proc.wait(timeout=300)
    drain.join()
    stderr = stderr_text[0]
    assert proc.returncode == 5, stderr[-2000:]  # results kept locally only (gpubench/exit_codes.py)
    run_id = json.loads(first)["run_id"]
    folder = tmp_path / "gpubench-results" / run_id
    assert (folder / "results.jsonl").read_text() == first + rest  # nothing measured was lost
    assert json.loads((folder / "upload.json").read_text())["status"] == "pending"
    assert f"gpubench upload {folder.relative_to(tmp_path)}" in stderr or f"gpubench upload {folder}" in stderr

    # Later, with the store reachable again (same bucket name, another server): `gpubench upload` finds it.
    s3.make_bucket(bucket)
    later = gpubench("upload", cwd=tmp_path, env=s3.env())
    assert later.code == 0, later.stderr
    keys = set(_objects(s3, bucket))
    assert keys == {f"p/{run_id}/{name}" for name in RUN_FILES}
    assert json.loads((folder / "upload.json").read_text())["status"] == "done"
    assert gpubench("upload", cwd=tmp_path, env=s3.env()).stderr.startswith("nothing pending")


def test_no_secret_reaches_output_files_or_objects(tmp_path, s3, s3_bucket):
    result = gpubench(*SMOKE, "--store", f"s3://{s3_bucket}/s", cwd=tmp_path, env=s3.env())
    assert result.code == 0
    texts = [result.stdout, result.stderr]
    texts += [p.read_text() for p in (tmp_path / "gpubench-results").rglob("*") if p.is_file()]
    texts += [body.decode() for body in _objects(s3, s3_bucket).values()]
    for text in texts:
        assert s3.secret_key not in text and s3.access_key not in text
