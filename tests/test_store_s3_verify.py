"""The verified upload against a real S3 server (SeaweedFS) that hands back something else than was sent:
the object is rewritten behind the store's back between its put and its read-back, once with a wrong
checksum and once with a corrupted body. The run must be kept locally, marked as not uploaded."""

from __future__ import annotations

import hashlib
import json

import boto3
import pytest

from gpubench import exit_codes, stores
from gpubench.cli.main import main

TARGET = "results.jsonl"


@pytest.fixture
def tamper(s3, monkeypatch):
    """After each put of a `results.jsonl`, another client overwrites it (how is up to the test)."""
    outsider = s3.client()  # made before the patch: its own puts are not tampered with
    tampered: list[str] = []

    def install(rewrite):
        def after_put(params, **_):
            if params["Key"].endswith("/" + TARGET):
                body, metadata = rewrite(params["Body"], params["Metadata"])
                outsider.put_object(Bucket=params["Bucket"], Key=params["Key"], Body=body, Metadata=metadata)
                tampered.append(params["Key"])

        class Session(boto3.session.Session):
            def client(self, *args, **kwargs):
                client = super().client(*args, **kwargs)
                pending = {}
                client.meta.events.register("provide-client-params.s3.PutObject",
                                            lambda params, **_: pending.update(params=dict(params)))
                client.meta.events.register("after-call.s3.PutObject", lambda **_: after_put(pending["params"]))
                return client

        monkeypatch.setattr(boto3.session, "Session", Session)
        return tampered

    return install


def wrong_checksum(body, metadata):
    return body, {**metadata, "sha256": hashlib.sha256(b"something else").hexdigest()}


def corrupted_body(body, metadata):
    return body[:-2] + b"X\n", metadata  # the sha256 it claims is still the sent one's


def test_a_read_back_with_another_checksum_keeps_the_run_locally(tmp_path, s3, s3_bucket, s3_env, tamper,
                                                                 monkeypatch, capsys):
    tampered = tamper(wrong_checksum)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["run", "first-matmul", "--smoke", "--store", f"s3://{s3_bucket}/runs"])
    out, err = capsys.readouterr()
    assert exited.value.code == exit_codes.KEPT_LOCALLY, err[-2000:]  # measured and kept, not uploaded
    [folder] = (tmp_path / "gpubench-results").iterdir()
    assert tampered == [f"runs/{folder.name}/{TARGET}"], err[-2000:]
    assert f"upload of runs/{folder.name}/{TARGET} to s3://{s3_bucket}/runs did not verify" in err
    assert f"gpubench upload gpubench-results/{folder.name}" in err
    state = json.loads((folder / stores.UPLOAD_FILE).read_text())
    assert state["status"] == "pending" and "did not verify" in state["reason"]
    assert state["store"] == f"s3://{s3_bucket}/runs"
    assert (folder / TARGET).read_text() == out  # every record kept, as printed


def test_a_corrupted_object_with_the_right_checksum_metadata_does_not_verify(tmp_path, s3, s3_bucket, s3_env,
                                                                            tamper):
    tampered = tamper(corrupted_body)
    folder = tmp_path / "run-1"
    folder.mkdir()
    (folder / TARGET).write_text('{"kind": "result"}\n')
    (folder / "config.json").write_text("{}\n")
    store = stores.S3Store(bucket=s3_bucket, prefix="p")
    ok, message = stores.deliver(folder, store)
    assert not ok and tampered == [f"p/run-1/{TARGET}"]
    assert message.startswith(f"upload of p/run-1/{TARGET} to s3://{s3_bucket}/p did not verify; kept {folder}")
    assert stores.upload_state(folder)["status"] == "pending"
    assert (folder / TARGET).read_text() == '{"kind": "result"}\n'


def test_the_same_upload_untampered_verifies(tmp_path, s3, s3_bucket, s3_env):
    folder = tmp_path / "run-1"
    folder.mkdir()
    (folder / TARGET).write_text('{"kind": "result"}\n')
    (folder / "config.json").write_text("{}\n")
    ok, message = stores.deliver(folder, stores.S3Store(bucket=s3_bucket, prefix="p"))
    assert ok, message
    assert message == f"uploaded 2 files to s3://{s3_bucket}/p/run-1/"
    state = stores.upload_state(folder)
    assert state["status"] == "done"
    assert state["objects"] == {f"p/run-1/{name}": hashlib.sha256((folder / name).read_bytes()).hexdigest()
                                for name in ("config.json", TARGET)}
    head = s3.client().head_object(Bucket=s3_bucket, Key=f"p/run-1/{TARGET}")
    assert head["ContentType"] == "application/x-ndjson"
