"""The real `gpubench run` (its runner and worker, first-matmul's smoke run: torch and one small matmul)
behind the launcher, on every path where records are produced: a job, an instance, --each, Ctrl-C and a
limit. The records the launcher stores must be those the real run printed, its stderr text in run.log."""

from __future__ import annotations

import json
import signal

import pytest
import test_launch_support as support
from test_launch_support import API_KEY, LAUNCHER_PACE, launch, launcher_process, read_until, run_folders

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env
REAL = "gpubench run first-matmul --smoke"
SLOWER = [{"minute_s": 2.0}]  # API minutes long enough for a real run under the safety net


def check_folder(folder, printed: list[dict], finished: str | None = "ok") -> list[dict]:
    """The folder holds what the real run printed, with its run id, and the real run's text in run.log."""
    stored = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert stored == printed
    assert {r["run_id"] for r in stored} == {folder.name}
    assert stored[0]["kind"] == "run_started" and stored[0]["workload"] == "first-matmul"
    results = [r for r in stored if r["kind"] == "result"]
    assert results and all(r["status"] == "ok" and r["device"] == "cpu" for r in results)
    for r in results:
        metrics = {k: v["value"] for k, v in r["metrics"].items()}
        assert metrics["warm_matmul_ms"] > 0 and metrics["warm_tflops"] > 0
    if finished:
        assert stored[-1]["kind"] == "run_finished" and stored[-1]["status"] == finished
    log = (folder / "run.log").read_text()
    assert "[1/" in log and "first-matmul matmul (repeat 1)" in log  # the runner's stderr, combined
    return stored


def by_run(records: list[dict]) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {}
    for r in records:
        runs.setdefault(r["run_id"], []).append(r)
    return runs


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_a_job(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", f"{REAL} --repeats 2")
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    stored = check_folder(folder, result.records())
    env = stored[0]["environment"]
    assert env["launcher"] == "runcrate-job" and env["gpu_requested"] == "L40S"
    assert stored[0]["price_usd_per_hour"] == 0.86
    assert [s["ok_repeats"] for s in stored[-1]["summary"]] == [2]
    assert json.loads((folder / "job.json").read_text())["status"] == "succeeded"


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_an_instance(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "L40S", "--job-command", REAL)
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    stored = check_folder(folder, result.records())
    assert stored[0]["environment"]["launcher"] == "runcrate-instance"
    [instance] = fake.instances.values()
    assert instance.status == "terminated"


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_each(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--each", "--gpu", "L40S", "--gpu", "A4000", "--job-command", REAL)
    assert result.code == 0, result.stderr
    runs = by_run(result.records())
    folders = run_folders(tmp_path)
    assert sorted(runs) == [f.name for f in folders] and len(folders) == 2
    gpus = {check_folder(f, runs[f.name])[0]["environment"]["gpu_requested"] for f in folders}
    assert gpus == {"L40S", "A4000"}


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_ctrl_c_keeps_what_the_real_run_measured(fake, tmp_path):
    env = {"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
           "GPUBENCH_STATE_DIR": str(tmp_path / "state"), **LAUNCHER_PACE}
    proc = launcher_process(["train-compile", "--gpu", "L40S", "--job-command", f"{REAL} --repeats 50"], env,
                            tmp_path)
    try:
        arrived = read_until(proc.stdout, lambda line: '"kind":"result"' in line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_codes.INTERRUPTED, err
    [job] = fake.jobs.values()
    assert job.status == "cancelled"
    [folder] = run_folders(tmp_path)
    printed = [json.loads(line) for line in [*arrived, *out.splitlines()] if line.strip()]
    stored = check_folder(folder, printed, finished=None)
    assert len([r for r in stored if r["kind"] == "result"]) < 50


# The safety net is ceil(limit) + 2 API minutes: 45 s here, well after the limit's 15 s.
@pytest.mark.parametrize("fake", [{"minute_s": 15.0}], indirect=True)
def test_a_limit_keeps_what_the_real_run_measured(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--max-minutes", "0.25",
                    "--job-command", f"{REAL} --repeats 50")
    assert result.code == exit_codes.LIMIT_REACHED, result.stderr
    [folder] = run_folders(tmp_path)
    stored = check_folder(folder, result.records(), finished=None)
    assert len([r for r in stored if r["kind"] == "result"]) < 50
    assert json.loads((folder / "job.json").read_text())["stopped_by"] == "max-minutes"
