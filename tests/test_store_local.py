"""The store's own rules, in process: the run folder (records to the file and the echo, text to run.log,
config sorted), folders that cannot be written, store URLs, the upload state file, one-line reasons,
and an S3 store that has no credentials, refuses writes, cannot be reached, or already holds the run."""

from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.exceptions import ClientError

from gpubench import stores
from gpubench.schema import Progress
from gpubench.stores import RunDir, S3Store, StoreError


def test_a_run_folder_keeps_records_echoed_and_text_apart(tmp_path):
    echo = io.StringIO()
    run = RunDir.create(tmp_path / "results" / "nested", "run-1", echo=echo)  # parents made as needed
    record = Progress(run_id="run-1", phase="p")
    run.record(record)
    run.record_line('{"raw": 1}')
    run.log("some text\n")
    run.log("more")
    run.log("  trailing spaces kept, X too  X")
    run.log("ünïcode ✓")
    run.log("ends in spaces  ")
    run.write_config({"b": 1, "a": {"d": 2, "c": 3}})
    run.close()
    folder = tmp_path / "results" / "nested" / "run-1"
    lines = (folder / stores.RECORDS_FILE).read_text().splitlines()
    assert lines == [record.model_dump_json(), '{"raw": 1}'] and echo.getvalue().splitlines() == lines
    assert (folder / stores.LOG_FILE).read_bytes().decode("utf-8") == (
        "some text\nmore\n  trailing spaces kept, X too  X\nünïcode ✓\nends in spaces  \n")
    assert (folder / stores.CONFIG_FILE).read_text() == json.dumps(
        {"a": {"c": 3, "d": 2}, "b": 1}, indent=2, sort_keys=True) + "\n"


def test_a_folder_that_exists_or_cannot_be_made_is_refused(tmp_path):
    RunDir.create(tmp_path, "run-1", echo=io.StringIO()).close()
    with pytest.raises(StoreError, match=r"^run folder .*run-1 already exists$"):
        RunDir.create(tmp_path, "run-1")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"^cannot write results under .*a-file/below: Not a directory$"):
        RunDir.create(blocker / "below", "run-2")


def test_the_results_folder_is_checked_before_anything_runs(tmp_path):
    stores.check_local_dir(tmp_path / "not" / "yet" / "made")  # made later, under a writable folder
    stores.check_local_dir(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"^results folder .*a-file/below is not writable$"):
        stores.check_local_dir(blocker / "below")


@pytest.mark.parametrize(("url", "store"), [
    (None, None), ("", None), ("local", None),
    ("s3://bucket", S3Store("bucket", "")), ("s3://bucket/team/runs/", S3Store("bucket", "team/runs")),
    ("s3://bucket/Xteam/X/", S3Store("bucket", "Xteam/X"))])
def test_store_urls(url, store):
    assert stores.parse_store(url) == store


@pytest.mark.parametrize("url", ["gs://bucket/x", "s3://", "bucket/x", "s3://b/x?versionId=1", "s3://b/x#f",
                                 "s3://key:secret@bucket/x"])
def test_bad_store_urls_are_one_line_errors(url):
    with pytest.raises(StoreError, match=r"^bad store URL .*: use s3://bucket/prefix"):
        stores.parse_store(url)


def test_keys_and_urls():
    assert S3Store("b", "team/runs").url == "s3://b/team/runs"
    assert S3Store("b", "").url == "s3://b"
    assert S3Store("b", "p").key("run-1", "results.jsonl") == "p/run-1/results.jsonl"
    assert S3Store("b", "").key("run-1", "results.jsonl") == "run-1/results.jsonl"


def test_the_upload_state_file(tmp_path):
    store = S3Store("b", "p")
    assert stores.upload_state(tmp_path) is None
    stores.mark_pending(tmp_path, store, "no network")
    assert stores.upload_state(tmp_path) == {"store": "s3://b/p", "status": "pending", "reason": "no network"}
    stores.mark_done(tmp_path, store, {"p/x/results.jsonl": "ab12"})
    assert (tmp_path / stores.UPLOAD_FILE).read_text() == json.dumps(  # for a person to read, too
        {"store": "s3://b/p", "status": "done", "objects": {"p/x/results.jsonl": "ab12"}}, indent=2) + "\n"
    assert stores.upload_state(tmp_path) == {"store": "s3://b/p", "status": "done",
                                             "objects": {"p/x/results.jsonl": "ab12"}}
    (tmp_path / stores.UPLOAD_FILE).write_text("{not json")
    assert stores.upload_state(tmp_path) is None


def test_reasons_are_one_line():
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied."}}, "PutObject")
    assert stores._describe(denied) == "AccessDenied: Access Denied."
    assert stores._describe(ClientError({"Error": {"Code": "Teapot"}}, "PutObject")) == "Teapot"
    assert stores._describe(ClientError({"Error": {}}, "PutObject")) == "error"
    assert stores._describe(ClientError({"Error": {"Code": "X", "Message": "ends in X"}}, "Op")) == "X: ends in X"
    assert stores._describe(OSError("ends in X")) == "OSError: ends in X"
    assert stores._describe(OSError("first line\nsecond line")) == "OSError: first line"
    assert stores._describe(TimeoutError()) == "TimeoutError"


def test_content_types():
    assert stores._content_type("results.jsonl") == "application/x-ndjson"
    assert stores._content_type("config.json") == "application/json"
    assert stores._content_type("run.log") == "text/plain"


def test_no_credentials_is_said_before_anything_runs(clean_aws_env):
    with pytest.raises(StoreError, match=r"^no S3 credentials for s3://b/p: set AWS_ACCESS_KEY_ID"):
        S3Store("b", "p").check_writable("run-1")


def test_a_store_that_refuses_writes(s3, s3_bucket, monkeypatch):
    for name, value in s3.readonly_env().items():
        monkeypatch.setenv(name, value)
    with pytest.raises(StoreError, match=rf"^cannot write to s3://{s3_bucket}/p: AccessDenied"):
        S3Store(s3_bucket, "p").check_writable("run-1")


def test_the_write_check_writes_where_the_run_will_and_leaves_nothing(s3, s3_bucket, s3_env, monkeypatch):
    puts = record_puts(monkeypatch)
    S3Store(s3_bucket, "p").check_writable("run-1")
    assert puts == ["p/run-1/.write-check"]  # under the run's own prefix: what a scoped policy allows
    assert s3.client().list_objects_v2(Bucket=s3_bucket).get("KeyCount") == 0


def record_puts(monkeypatch) -> list[str]:
    """The keys of every PutObject the store's clients send from now on."""
    puts: list[str] = []

    class Session(boto3.session.Session):
        def client(self, *args, **kwargs):
            client = super().client(*args, **kwargs)
            client.meta.events.register("provide-client-params.s3.PutObject",
                                        lambda params, **_: puts.append(params["Key"]))
            return client

    monkeypatch.setattr(boto3.session, "Session", Session)
    return puts


def test_a_store_that_cannot_be_reached_keeps_the_run(tmp_path, s3_env, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    (tmp_path / "results.jsonl").write_text("{}\n")
    ok, message = stores.deliver(tmp_path, S3Store("b", "p"))
    assert not ok and message.startswith("upload to s3://b/p failed: ")
    assert "\n" not in message
    assert message.endswith(f"; kept {tmp_path} (send it later with: gpubench upload {tmp_path})")
    assert stores.upload_state(tmp_path)["status"] == "pending"


def test_what_is_stored_already_is_not_sent_again(tmp_path, s3, s3_bucket, s3_env, monkeypatch):
    folder = tmp_path / "run-1"
    folder.mkdir()
    (folder / "results.jsonl").write_text("{}\n")
    (folder / "run.log").write_text("text\n")
    store = S3Store(s3_bucket, "p")
    assert stores.deliver(folder, store)[0]
    (folder / "run.log").write_text("changed\n")
    puts = record_puts(monkeypatch)
    ok, message = stores.deliver(folder, store)
    assert ok and message == f"uploaded 2 files to s3://{s3_bucket}/p/run-1/"
    assert puts == ["p/run-1/run.log"]  # only what changed
    assert s3.client().get_object(Bucket=s3_bucket, Key="p/run-1/run.log")["Body"].read() == b"changed\n"
