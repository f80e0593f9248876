"""Bad input: one line on stderr, exit 2, and nothing submitted or created (so nothing billed)."""

from __future__ import annotations

import socket

import pytest
import test_launch_support as support
from test_launch_support import API_KEY, emitter_command, launch

fake, launcher_env = support.fake, support.launcher_env


def launches(fake) -> list:
    return [r for r in fake.requests if r.method == "POST" and r.path in ("/api/v1/jobs", "/api/v1/instances")]


def assert_one_line_error(result, *fragments: str) -> str:
    assert result.code == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpubench-launch: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize("args, fragments", [
    (["train-compile", "--gpu", "B300"], ["unknown GPU 'B300'", "A100, A100-80GB, A4000, H100, L40S, RTX5090"]),
    (["nope", "--gpu", "L40S"], ["unknown workload 'nope'", "train-compile", "first-matmul"]),
    (["train-compile", "--gpu", "L40S", "--setups", "eager-sdpa,fast"], ["unknown setup 'fast'", "compile-eager"]),
    (["train-compile", "--gpu", "L40S", "--max-cost", "-1"], ["--max-cost", "-1"]),
    (["train-compile", "--gpu", "L40S:9"], ["count after ':' must be 1 to 8"]),
    (["train-compile", "--gpu", "RTX5090", "--gpu", "rtx5090"], ["the same GPU twice", "RTX5090"]),
    (["train-compile", "--gpu", "L40S", "--gpu", "H100", "--gpu", "L40S", "--each"], ["the same GPU twice"]),
    (["train-compile", "--gpu", "A100-80GB:4"], ["no A100-80GB with 4 GPU(s)", "counts offered: 1, 2"]),
    (["train-compile", "--gpu", "A100", "--via", "instance"], ["no container-type A100", "L40S"]),
    (["train-compile"], ["Missing option '--gpu'"]),
    (["train-compile", "--gpu", "L40S", "--bogus"], ["No such option '--bogus'"]),
    ([], ["give a workload or a command"]),
    (["status"], ["Missing argument 'RUN_ID'"]),
])
def test_bad_arguments(fake, launcher_env, capsys, args, fragments):
    assert_one_line_error(launch(capsys, *args), *fragments)
    assert launches(fake) == []


def test_missing_key(fake, launcher_env, capsys, monkeypatch):
    monkeypatch.delenv("RUNCRATE_API_KEY")
    assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S"), "RUNCRATE_API_KEY is not set")
    assert fake.requests == []


@pytest.mark.parametrize("key", ["sk_live_0123456789abcdef", "rc_live_has a space", "rc_live_newline\n"])
def test_malformed_key_is_refused_before_any_request_and_not_echoed(fake, launcher_env, capsys, monkeypatch, key):
    monkeypatch.setenv("RUNCRATE_API_KEY", key)
    line = assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S"), "RUNCRATE_API_KEY is malformed")
    assert key.strip() not in line
    assert fake.requests == []


def test_wrong_key_is_a_one_line_401(fake, launcher_env, capsys, monkeypatch):
    monkeypatch.setenv("RUNCRATE_API_KEY", "rc_live_not-the-fakes-key-123456")
    line = assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S"), "HTTP 401")
    assert "rc_live_not-the-fakes-key-123456" not in line
    assert launches(fake) == []


def test_unreachable_api(fake, launcher_env, capsys, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("RUNCRATE_BASE_URL", f"http://127.0.0.1:{port}")
    assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S"), "cannot reach the Runcrate API",
                          f"127.0.0.1:{port}")


def test_store_refusing_writes_is_found_before_submitting(fake, launcher_env, s3, s3_bucket, s3_env, capsys,
                                                          tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-right-secret-4242")
    line = assert_one_line_error(
        launch(capsys, "train-compile", "--gpu", "L40S", "--store", f"s3://{s3_bucket}/x",
               "--job-command", emitter_command()),
        f"cannot write to s3://{s3_bucket}/x")
    assert "not-the-right-secret-4242" not in line
    assert launches(fake) == []
    assert not (tmp_path / "gpubench-results").exists() or not any((tmp_path / "gpubench-results").iterdir())


def test_store_without_credentials(fake, launcher_env, clean_aws_env, capsys):
    assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S", "--store", "s3://bucket/x"),
                          "no S3 credentials")
    assert launches(fake) == []


def test_bad_store_url(fake, launcher_env, capsys):
    assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S", "--store", "gs://bucket/x"),
                          "bad store URL")
    assert fake.requests == []


def test_refused_submit_is_exit_2_and_leaves_no_folder(fake, launcher_env, capsys, tmp_path):
    fake.inject("POST", r"/api/v1/jobs", 402, code="BUDGET_REACHED", message="monthly budget reached")
    assert_one_line_error(launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", emitter_command()),
                          "HTTP 402 BUDGET_REACHED")
    assert fake.jobs == {}
    assert not any((tmp_path / "gpubench-results").iterdir())
    assert API_KEY not in "".join(r.body.decode() for r in fake.requests)
