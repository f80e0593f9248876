"""`gpubench-launch sweep` of a [slurm] plan against a real Slurm controller and node (tests/slurm_cluster.py):
each cell one batch job on its partition, its records streamed from the job's output file while it runs, its run
folder written (and uploaded) by the job itself, and a second call submitting nothing."""

from __future__ import annotations

import json
import os

import boto3
from slurm_support import TRAIN, finished, launcher, plan_text, run_folders, slurm, sweep_jobs, write_plan

from gpubench import exit_codes

PID = os.getpid()  # in each plan's name: a sweep's jobs are found by its id, and squeue keeps ended ones a while

__all__ = ["slurm"]  # the fixture


def test_two_cells_on_two_partitions_stored_once_and_not_again(slurm, s3, s3_bucket, s3_env, tmp_path):
    plan = write_plan(tmp_path, plan_text(f"twocells{PID}", [("train-compile", ["H100", "L40S"], TRAIN)]))
    store = f"s3://{s3_bucket}/s"
    first = launcher(["sweep", plan, "--store", store], slurm, tmp_path, s3_env)
    assert first.code == exit_codes.OK, first.stderr
    jobs = sweep_jobs(slurm, f"twocells{PID}")
    assert len(jobs) == 2 and all(j["state"] == "COMPLETED" for j in jobs)
    assert {"partition h100" in first.stderr, "partition l40s" in first.stderr} == {True}
    # The records came through the launcher's stdout as the jobs wrote them: both runs, start to end.
    kinds = [(r["run_id"], r["kind"]) for r in first.records()]
    runs = {run for run, _ in kinds}
    assert len(runs) == 2 and all((run, "run_finished") in kinds and (run, "result") in kinds for run in runs)

    folders = run_folders(tmp_path / "gpubench-results")
    assert sorted(f.split("/")[1] for f in folders) == ["H100", "L40S"]  # one run per cell
    for folder in folders.values():
        assert finished(folder) == "ok"
        facts = json.loads((folder / "job.json").read_text())
        assert facts["via"] == "slurm" and facts["state"] == "COMPLETED" and facts["exit_code"] == 0
        config = json.loads((folder / "config.json").read_text())  # the job's own gpubench wrote it, on the node
        assert config["environment"]["launcher"] == "slurm"
    # The job uploaded its own folder; the launcher added job.json.
    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.access_key,
                          aws_secret_access_key=s3.secret_key, region_name="us-east-1")
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket, Prefix="s/")["Contents"]}
    for name, folder in folders.items():
        sweep_id = folder.parts[-5]
        job_id = json.loads((folder / "job.json").read_text())["job_id"]
        for file in ("results.jsonl", "config.json", "job.json", f"slurm-{job_id}.out", "job.sbatch"):
            assert f"s/{sweep_id}/{name}/{file}" in keys  # Slurm's output and script are uploaded with the results

    second = launcher(["sweep", plan, "--store", store], slurm, tmp_path, s3_env)
    assert second.code == exit_codes.OK, second.stderr
    assert len(sweep_jobs(slurm, f"twocells{PID}")) == 2  # nothing submitted
    assert second.stderr.count(": done (stored run ") == 2
    assert run_folders(tmp_path / "gpubench-results").keys() == folders.keys()


def test_pending_with_slurms_reason_then_running_then_done(slurm, tmp_path):
    """Two cells on one partition with one GPU: the controller holds the second (Resources) until the first ends."""
    cells = [("train-compile", ["H100"], TRAIN), ("train-compile", ["H100"], [*TRAIN[:-1], "2"])]
    result = launcher(["sweep", write_plan(tmp_path, plan_text(f"onegpu{PID}", cells))], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    lines = result.stderr.splitlines()
    waited = [ln for ln in lines if "pending: Resources" in ln]
    assert waited, result.stderr
    run = waited[0].split("[", 1)[1].split("]", 1)[0]
    states = [ln.split("] ", 1)[1] for ln in lines if f"[{run}] " in ln]
    order = [next(i for i, s in enumerate(states) if s.startswith(prefix))
             for prefix in ("pending: Resources", "running on", "completed")]
    assert order == sorted(order), states


def test_a_job_that_fails_says_why(slurm, tmp_path):
    """whisper without --smoke needs weights the node lacks: the job exits 2 and its own reason reaches the terminal."""
    cells = [("whisper", ["L40S"], ["--setups", "fw-turbo-fp16-b16"])]
    plan = write_plan(tmp_path, plan_text(f"failing{PID}", cells, extra="cpus_per_gpu = 1"))  # this node has 2
    result = launcher(["sweep", plan], slurm, tmp_path)
    assert result.code == exit_codes.JOB_NOT_SUCCEEDED, result.stderr
    assert "job failed: exit code 2: gpubench: error: whisper needs weights that are not on this machine" \
        in result.stderr
    assert "or run with --weights random (same compute, random values)" in result.stderr  # the whole line
    [job] = sweep_jobs(slurm, f"failing{PID}")
    assert job["state"] == "FAILED"
    [summary_file] = (tmp_path / "gpubench-results").glob(f"failing{PID}-*/sweep.json")
    summary = json.loads(summary_file.read_text())
    assert [c["state"] for c in summary["cells"]] == ["failed"]


def test_a_partition_that_does_not_exist(slurm, tmp_path):
    gpus = {"H100": 'partition = "h100"', "B200": 'partition = "b200", gres = "gpu:b200"'}
    plan = write_plan(tmp_path, plan_text(f"nopart{PID}", [("train-compile", ["H100", "B200"], TRAIN)], gpus))
    result = launcher(["sweep", plan], slurm, tmp_path)
    assert result.code == exit_codes.BAD_INPUT
    assert result.stderr.strip().splitlines() == [
        f"gpubench-launch: error: plan {plan}: [slurm.gpus] B200: no partition 'b200' on this cluster"
        " (partitions: h100, l40s)"]
    assert sweep_jobs(slurm, f"nopart{PID}") == []
    assert not (tmp_path / "gpubench-results").exists()


def test_a_gpu_name_without_a_mapping(slurm, tmp_path):
    plan = write_plan(tmp_path, plan_text(f"nomap{PID}", [("train-compile", ["A100"], TRAIN)]))
    result = launcher(["sweep", plan], slurm, tmp_path)
    assert result.code == exit_codes.BAD_INPUT
    [line] = result.stderr.strip().splitlines()
    assert "unknown GPU 'A100'" in line and "[slurm.gpus]" in line, line
    assert sweep_jobs(slurm, f"nomap{PID}") == []


def test_slurm_not_answering(slurm, tmp_path):
    """A controller that is not there (its port closed): one line, exit 2, nothing written."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "slurm.conf"
    conf.write_text("\n".join(f"SlurmctldPort={port}" if ln.startswith("SlurmctldPort=") else ln
                              for ln in slurm.conf.read_text().splitlines()) + "\n")
    plan = write_plan(tmp_path, plan_text(f"noanswer{PID}", [("train-compile", ["H100"], TRAIN)]))
    result = launcher(["sweep", plan], slurm, tmp_path, {"SLURM_CONF": str(conf), "GPUBENCH_SLURM_TIMEOUT_S": "20"})
    assert result.code == exit_codes.BAD_INPUT
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("gpubench-launch: error: Slurm is not answering: sinfo"), line
    assert "not installed" not in line  # it is installed: the controller does not answer
    assert not (tmp_path / "gpubench-results").exists()


def test_gpu_hours_cap(slurm, tmp_path):
    """Each job may use its --time: a cap below the worst case is refused before anything is submitted."""
    plan = write_plan(tmp_path, plan_text(f"capped{PID}", [("train-compile", ["H100", "L40S"], TRAIN)],
                                          extra="max_gpu_hours = 0.3"))
    result = launcher(["sweep", plan], slurm, tmp_path)
    assert result.code == exit_codes.BAD_INPUT
    assert "worst case 0.40 GPU-hours" in result.stderr and "max_gpu_hours 0.3" in result.stderr
    assert sweep_jobs(slurm, f"capped{PID}") == []


def test_first_matmul_is_swept_submit_to_first_matmul(slurm, tmp_path):
    """A study that runs on instances on Runcrate is a batch job here: job.json times submit -> running -> matmul."""
    plan = write_plan(tmp_path, plan_text(f"matmul{PID}", [("first-matmul", ["L40S"], ["--smoke"])]))
    result = launcher(["sweep", plan], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    [folder] = run_folders(tmp_path / "gpubench-results").values()
    assert finished(folder) == "ok"
    times = json.loads((folder / "job.json").read_text())["timings"]
    assert 0 < times["submit_to_running_s"] < times["submit_to_first_result_s"]
