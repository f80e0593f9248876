"""How a Slurm job that does not succeed is reported, against the real controller: a setup that fails at run time
shows its own error (not srun's trailer), a run past its --time says Slurm's time limit interrupted it and keeps
what it measured, and a submission sbatch refuses (or a login node without sbatch) leaves nothing behind."""

from __future__ import annotations

import json
import os

from slurm_support import (
    finished,
    launcher,
    plan_text,
    run_folders,
    slurm,
    sweep_jobs,
    write_plan,
)

from gpubench import exit_codes

PID = os.getpid()
CUDA = "AssertionError: Torch not compiled with CUDA enabled"

__all__ = ["slurm"]


def _summary(root, name: str) -> dict:
    return json.loads(next(root.glob(f"{name}-*/sweep.json")).read_text())


def _job(folder) -> dict:
    return json.loads((folder / "job.json").read_text())


def test_a_setup_that_fails_at_run_time_shows_its_own_error(slurm, tmp_path):
    """--set device=cuda on a CPU node: the setup raises; the terminal, sweep.json and job.json all say so."""
    name = f"cuda{PID}"
    cells = [("train-compile", ["L40S"], ["--smoke", "--setups", "eager-sdpa", "--repeats", "1", "--set",
                                         "device=cuda"])]
    root = tmp_path / "gpubench-results"
    result = launcher(["sweep", write_plan(tmp_path, plan_text(name, cells))], slurm, tmp_path)
    assert result.code == exit_codes.JOB_NOT_SUCCEEDED, result.stderr
    assert f"job failed: exit code 1: eager-sdpa: {CUDA}" in result.stderr
    assert "Exited with exit code" not in result.stderr  # srun's trailer is not the reason
    [cell] = _summary(root, name)["cells"]
    assert cell["state"] == "failed" and cell["note"] == f"job failed: exit code 1: eager-sdpa: {CUDA}"
    [folder] = run_folders(root).values()
    facts = _job(folder)
    assert facts["error"] == f"exit code 1: eager-sdpa: {CUDA}" and facts["state"] == "FAILED"
    assert "srun: error:" in (folder / f"slurm-{facts['job_id']}.out").read_text()  # it was there, last


def test_a_run_past_its_time_is_interrupted_by_the_time_limit_and_keeps_its_first_setup(slurm, tmp_path):
    """--time 3 min (the smoke run's 2 + a margin of 1): Slurm's SIGINT comes 60 s before it, or up to 60 s earlier
    (sbatch --signal), so after 60 s at the soonest: the first matmul (about 10 s) is measured by then. The run
    stores what it measured and ends `interrupted`; the launcher says the time limit stopped it."""
    name = f"timelimit{PID}"
    cells = [("first-matmul", ["L40S"], ["--smoke", "--repeats", "100"])]  # far longer than 3 minutes
    text = plan_text(name, cells).replace("time_margin_minutes = 10", "time_margin_minutes = 1")
    root = tmp_path / "gpubench-results"
    # At nice 5 its repeats take the cores the other tests leave (the first result still comes in seconds).
    result = launcher(["sweep", write_plan(tmp_path, text)], slurm, tmp_path, nice=5)
    assert result.code == exit_codes.JOB_NOT_SUCCEEDED, result.stderr
    said = "Slurm interrupted the run 60 s before its --time of 3 minutes (what it measured is kept)"
    assert said in result.stderr
    [folder] = run_folders(root).values()
    facts = _job(folder)
    assert facts["stopped_by"] == "time limit" and facts["error"] == said and facts["exit_code"] == 130
    assert finished(folder) == "interrupted"
    results = [json.loads(ln) for ln in (folder / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results if r["kind"] == "result"][0] == "ok"  # its first setup, kept
    [cell] = _summary(root, name)["cells"]
    assert cell["state"] == "time limit" and said in cell["note"]


def test_a_refused_submission_leaves_nothing_and_does_not_stop_the_others(slurm, tmp_path):
    """Two H100 GPUs on a node with one: sbatch refuses the job. Alone, that is one line, exit 2 and nothing
    written; beside a cell that runs, it is that cell's failure (exit 3: a cell has no result), not bad input."""
    alone = write_plan(tmp_path, plan_text(f"refusedalone{PID}", [("first-matmul", ["H100:2"], ["--smoke"])]))
    result = launcher(["sweep", alone], slurm, tmp_path)
    assert result.code == exit_codes.BAD_INPUT, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("gpubench-launch: error: sbatch: ") and "node configuration is not available" in line
    assert not (tmp_path / "gpubench-results").exists()  # no batch script, no sweep.json

    both = write_plan(tmp_path, plan_text(f"refusedone{PID}", [("first-matmul", ["H100:2", "L40S"], ["--smoke"])]))
    result = launcher(["sweep", both], slurm, tmp_path)
    assert result.code == exit_codes.JOB_NOT_SUCCEEDED, result.stderr
    cells = {c["gpu"]: c for c in _summary(tmp_path / "gpubench-results", f"refusedone{PID}")["cells"]}
    assert cells["L40S"]["state"] == "done" and cells["L40S"]["exit_code"] == exit_codes.OK
    assert cells["H100:2"]["state"] == "refused" and cells["H100:2"]["exit_code"] == exit_codes.JOB_NOT_SUCCEEDED
    assert "node configuration is not available" in cells["H100:2"]["note"]
    # (the controller keeps a FAILED record of the refused submission; only the L40S job ran)
    assert sorted(j["state"] for j in sweep_jobs(slurm, f"refusedone{PID}")) == ["COMPLETED", "FAILED"]
    sides = list((tmp_path / "gpubench-results").glob(f"refusedone{PID}-*/slurm/*/job.sbatch"))
    assert len(sides) == 1 and "l40s" in sides[0].read_text()  # the L40S array's only


def test_no_sbatch_on_this_machine(slurm, tmp_path):
    """A machine with sinfo but no sbatch: one line naming what is missing, before anything is written."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sinfo", "squeue", "scancel"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    plan = write_plan(tmp_path, plan_text(f"nosbatch{PID}", [("first-matmul", ["L40S"], ["--smoke"])]))
    result = launcher(["sweep", plan], slurm, tmp_path, {"PATH": str(bin_dir)})
    assert result.code == exit_codes.BAD_INPUT
    [line] = result.stderr.strip().splitlines()
    assert line == ("gpubench-launch: error: Slurm is not installed here: no sbatch on PATH (run gpubench-launch on a"
                    " login node, where sbatch and squeue work)")
    assert not (tmp_path / "gpubench-results").exists()
