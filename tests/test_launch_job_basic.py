"""A job run end to end against the fake: records streamed to stdout and the run folder, job facts
stored, exit code 0 only when everything was ok."""

from __future__ import annotations

import json

import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders

fake, launcher_env = support.fake, support.launcher_env


def test_job_run_stores_results_and_facts(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--job-command", emitter_command())
    assert result.code == 0, result.stderr
    kinds = [r["kind"] for r in result.records()]
    assert kinds == ["run_started", "progress", "result", "progress", "result", "run_finished"]
    [folder] = run_folders(tmp_path)
    run_id = folder.name
    assert all(r["run_id"] == run_id for r in result.records())
    assert (folder / "results.jsonl").read_text().splitlines() == result.stdout.splitlines()
    assert "starting: some text for run.log" in (folder / "run.log").read_text()

    config = json.loads((folder / "config.json").read_text())
    assert config["workload"] == "train-compile" and config["smoke"] is True
    assert config["gpus"][0]["gpu_type"] == "L40S"
    assert set(config["env_keys"]) >= {"GPUBENCH_RUN_ID", "GPUBENCH_LAUNCHER", "GPUBENCH_GPU_REQUESTED",
                                       "GPUBENCH_PRICE_USD_PER_HOUR"}

    facts = json.loads((folder / "job.json").read_text())
    [job] = fake.jobs.values()
    assert facts["job_id"] == job.id and facts["status"] == "succeeded"
    assert facts["gpu_type"] == "L40S" and facts["region"] == "us-east-1"
    assert facts["cost_usd"] > 0
    assert [e["kind"] for e in facts["events"]][0] == "created"
    assert isinstance(facts["artifacts"], list) and isinstance(facts["metrics"], list)
    pricing = facts["pricing"]  # which rate the cost metrics used, against the instance obtained
    assert (pricing["gpu_type"], pricing["region"]) == ("L40S", "us-east-1") and pricing["priced_at_usd_per_hour"] > 0
    assert "summary" in result.stderr and run_id in result.stderr


def test_job_submit_carries_plan_tags_and_env(fake, launcher_env, capsys):
    result = launch(capsys, "train-compile", "--gpu", "rtx-5090", "--gpu", "L40S", "--setups", "eager-sdpa",
                    "--job-command", emitter_command(setups=["eager-sdpa"]))
    assert result.code == 0, result.stderr
    [submit] = [r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]
    body = json.loads(submit.body)
    assert body["gpu_type"] == ["RTX5090", "L40S"]
    assert body["max_runtime_minutes"] == 31  # train-compile: 8 min expected -> 2*8+15
    assert body["tags"]["gpubench"] == "1" and body["tags"]["gpubench_run_id"] == result.records()[0]["run_id"]
    env = body["env"]
    assert env["GPUBENCH_LAUNCHER"] == "runcrate-job"
    assert env["GPUBENCH_GPU_REQUESTED"] == "rtx-5090,L40S"
    assert "GPUBENCH_PRICE_USD_PER_HOUR" not in env  # two prices: unknown until it runs
    assert env["GPUBENCH_PRICES_USD_PER_HOUR"] == "RTX5090=0.69,L40S=0.86"
    assert submit.headers.get("idempotency-key") == f"gpubench-{env['GPUBENCH_RUN_ID']}"


def test_setup_not_ok_gives_exit_1(fake, launcher_env, capsys):
    command = emitter_command(status={"compile-sdpa": "oom"})
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", command)
    assert result.code == 1, result.stderr


def test_failed_job_gives_exit_3_and_still_stores(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", emitter_command(exit=7))
    assert result.code == 3, result.stderr
    [folder] = run_folders(tmp_path)
    facts = json.loads((folder / "job.json").read_text())
    assert facts["status"] == "failed" and facts["exit_code"] == 7
    assert len((folder / "results.jsonl").read_text().splitlines()) == 6
