"""Bad input: one line on stderr, exit code 2, and no run folder left behind."""

import pytest
from clirun import BIN, gpubench


@pytest.mark.parametrize("args, says", [
    (["run", "nope"], "unknown workload 'nope'; valid: train-compile, embed"),
    (["run", "train-compile", "--setups", "eager-sdpa,fast"],
     "unknown setup of train-compile 'fast'; valid: eager-sdpa"),
    (["run", "train-compile", "--repeats", "0"], "--repeats must be a whole number from 1 to 100 (got 0)"),
    (["run", "train-compile", "--price", "-1"], "--price must be a positive"),
    (["run", "train-compile", "--store", "http://example.com/x"], "bad store URL"),
    (["run", "train-compile", "--set", "batch=big"], "--set batch=big: batch must be an integer >= 1"),
    (["run", "train-compile", "--set", "nosuch=1"], "unknown config field"),
    (["run", "train-compile", "--weights", "real"], "Invalid value for '--weights'"),
    (["run", "train-compile", "--frobnicate"], "No such option"),
    (["run", "train-compile", "--setups", ","], "--setups names no setup; valid: eager-sdpa, compile-sdpa"),
    (["run", "train-compile", "--image", "x"], "--image applies only with --docker"),
    (["upload", "not-a-run"], "is not a gpubench run folder"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    result = gpubench(*args, cwd=tmp_path)
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpubench: error: ") and says in lines[0]
    assert result.stdout == ""
    assert not (tmp_path / "gpubench-results").exists()


def test_a_full_size_run_on_a_host_without_gpu_asks_for_an_explicit_choice(tmp_path):
    no_gpu = {"PATH": str(BIN)}  # the venv's scripts only: no nvidia-smi, whatever this host has
    result = gpubench("run", "train-compile", cwd=tmp_path, env=no_gpu)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "gpubench: error: no GPU found (nvidia-smi): the full-size train-compile study would run for hours on the"
        " CPU; use --smoke to test the code path, or --cpu to run it on the CPU anyway")
    assert not (tmp_path / "gpubench-results").exists()
    # --cpu is the explicit yes: the run starts (here shrunk by --set, to stay short)
    tiny = ["vocab_size=64", "hidden_size=8", "intermediate_size=8", "num_layers=1", "num_heads=2", "seq_len=4",
            "timed_steps=1", "warmup_steps=0"]
    result = gpubench("run", "train-compile", "--cpu", "--setups", "eager-sdpa",
                      *(arg for pair in tiny for arg in ("--set", pair)), cwd=tmp_path, env=no_gpu)
    kinds = [r["kind"] for r in result.records()]
    assert result.code == 0 and kinds[0] == "run_started" and kinds[-1] == "run_finished"


def test_missing_s3_credentials_fail_before_running(tmp_path, clean_aws_env):
    result = gpubench("run", "train-compile", "--smoke", "--store", "s3://bucket/prefix", cwd=tmp_path)
    assert result.code == 2
    assert result.stderr.strip() == (
        "gpubench: error: no S3 credentials for s3://bucket/prefix: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,"
        " or AWS_PROFILE")
    assert not (tmp_path / "gpubench-results").exists()


def test_an_unwritable_results_folder_fails_before_running(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # root can write anywhere, but not under a file
    result = gpubench("run", "train-compile", "--smoke", "--results-dir", str(blocker / "results"), cwd=tmp_path)
    assert result.code == 2 and "is not writable" in result.stderr
    assert blocker.read_text() == "not a folder"


def test_docker_without_an_engine_says_so_in_one_line(tmp_path):
    result = gpubench("run", "train-compile", "--smoke", "--docker", cwd=tmp_path,
                      env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert result.code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Docker engine reachable" in lines[0] and "run without --docker" in lines[0]
    assert not (tmp_path / "gpubench-results").exists()
