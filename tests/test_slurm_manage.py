"""`gpubench-launch status|logs|cancel RUN_ID` and `cleanup` for Slurm runs, against the real controller: the job is
found by its comment in squeue, its exit code in the exit file it writes, its output in its output file; a job whose
launcher was killed is cancelled by run id, or by cleanup (scancel), and one squeue no longer lists is answered from
the folder the launcher left beside the results."""

from __future__ import annotations

import json
import os
import signal

from slurm_support import GPUS, PYTHON, SLOW_TRAIN, TRAIN, launcher, launcher_process, slurm
from test_launch_support import read_until

from gpubench import exit_codes

__all__ = ["slurm"]


def _cluster_file(folder) -> str:
    path = folder / "cluster.toml"
    lines = ["[slurm]", f"python = {json.dumps(PYTHON)}", "time_margin_minutes = 5", "[slurm.gpus]"]
    lines += [f"{gpu} = {{ {entry} }}" for gpu, entry in GPUS.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _env(tmp_path) -> dict[str, str]:
    return {"GPUBENCH_STATE_DIR": str(tmp_path / "state")}  # this test's launches only


ENDED = ("failed", "cancelled")  # interrupted (its `gpubench run` exits 130), or cancelled for good


def _finished(tmp_path, run_id: str) -> str | None:
    records = (tmp_path / "gpubench-results" / run_id / "results.jsonl").read_text().splitlines()
    return next((json.loads(r)["status"] for r in records if json.loads(r)["kind"] == "run_finished"), None)


def _fields(stdout: str) -> dict[str, str]:
    return {line[:10].strip(): line[11:].strip() for line in stdout.splitlines() if len(line) > 11}


def test_status_and_logs_of_a_finished_run(slurm, tmp_path):
    done = launcher(["train-compile", "--slurm", _cluster_file(tmp_path), "--gpu", "H100", *TRAIN], slurm, tmp_path,
                    _env(tmp_path))
    assert done.code == exit_codes.OK, done.stderr
    [run_id] = {r["run_id"] for r in done.records()}
    facts = json.loads((tmp_path / "gpubench-results" / run_id / "job.json").read_text())
    assert facts["provider"] == "slurm"

    status = launcher(["status", run_id], slurm, tmp_path, _env(tmp_path))
    assert status.code == exit_codes.OK, status.stderr
    fields = _fields(status.stdout)
    assert fields["run"] == run_id and fields["job"] == f"slurm job {facts['job_id']}"
    assert (fields["status"], fields["partition"], fields["exit_code"]) == ("completed", "h100", "0")
    assert fields["output"] == str(tmp_path / "gpubench-results" / run_id / f"slurm-{facts['job_id']}.out")  # moved
    assert fields["local"] == str(tmp_path / "gpubench-results" / run_id)

    logs = launcher(["logs", run_id], slurm, tmp_path, _env(tmp_path))
    assert logs.code == exit_codes.OK, logs.stderr
    assert [r for r in logs.records() if r["run_id"] == run_id] == done.records()  # the job's own output

    # Once the controller forgets a job (MinJobAge), the side folder the launcher left beside the results answers
    # (batch.json: run id -> job): here a run whose job id squeue does not know, and whose exit file says 3.
    old = run_id[:-6] + "0ld0ld"
    side = tmp_path / "gpubench-results" / "slurm" / f"gpubench-{old}"
    side.mkdir()
    task = {"index": 0, "run_id": old, "results_dir": str(tmp_path / "gpubench-results")}
    (side / "batch.json").write_text(json.dumps({"name": side.name, "job_id": "999999", "array": False,
                                                 "tasks": [task]}))
    (side / "exit-999999").write_text('{"exit_code": 3}\n')
    forgotten = launcher(["status", old], slurm, tmp_path, _env(tmp_path))
    assert forgotten.code == exit_codes.OK, forgotten.stderr
    fields = _fields(forgotten.stdout)
    assert (fields["job"], fields["status"]) == ("slurm job 999999", "ended, exit code 3 (no longer in squeue)")
    unknown = launcher(["status", run_id[:-6] + "abcdef"], slurm, tmp_path, _env(tmp_path))
    assert unknown.code == exit_codes.BAD_INPUT and unknown.stderr.startswith("gpubench-launch: error: no Slurm job")


def test_a_killed_launchers_jobs_are_cancelled_by_run_id_and_by_cleanup(slurm, tmp_path):
    env = _env(tmp_path)
    proc = launcher_process(["train-compile", "--slurm", _cluster_file(tmp_path), "--gpu", "H100", "--gpu", "L40S",
                             *SLOW_TRAIN], slurm, tmp_path, env)
    try:
        lines = read_until(proc.stdout, lambda line: '"kind":"run_started"' in line)
        lines += read_until(proc.stdout, lambda line: '"kind":"run_started"' in line
                            and json.loads(line)["run_id"] != json.loads(lines[-1])["run_id"])
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    first, second = (json.loads(line)["run_id"] for line in lines if '"kind":"run_started"' in line)

    running = launcher(["status", first], slurm, tmp_path, env)
    assert running.code == exit_codes.OK and _fields(running.stdout)["status"] == "running", running.stdout

    listing = launcher(["cleanup", "--dry-run"], slurm, tmp_path, env)
    assert listing.code == exit_codes.OK, listing.stderr
    for run_id in (first, second):
        [line] = [ln for ln in listing.stdout.splitlines() if run_id in ln]
        assert "would stop: scancel " in line  # its launcher is gone: cleanup says the command

    cancelled = launcher(["cancel", first], slurm, tmp_path, env)
    assert cancelled.code == exit_codes.OK, cancelled.stderr
    assert cancelled.stderr.startswith("gpubench-launch: slurm job ") and " stopped (" in cancelled.stderr
    assert _fields(launcher(["status", first], slurm, tmp_path, env).stdout)["status"] in ENDED
    assert _finished(tmp_path, first) == "interrupted"  # SIGINT first: the run stored what it had measured

    cleaned = launcher(["cleanup"], slurm, tmp_path, env)
    assert cleaned.code == exit_codes.OK, cleaned.stderr
    [line] = [ln for ln in cleaned.stdout.splitlines() if second in ln]
    assert line.endswith(" stopped")
    assert _fields(launcher(["status", second], slurm, tmp_path, env).stdout)["status"] in ENDED
    assert not list((tmp_path / "state" / "launches").glob("*.json"))  # the dead launcher's state is gone
    assert "no gpubench Slurm job is live" in launcher(["cleanup"], slurm, tmp_path, env).stdout
