"""Shared helpers for the Slurm tests (no tests here): the real one-node cluster (tests/slurm_cluster.py, reused
from GPUBENCH_TEST_SLURM_CONF when .ci/run started it), a [slurm] plan, and `gpubench-launch` as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import slurm_cluster
from test_launch_support import Result

BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python")  # the worktree's venv: the nodes' Python environment (the node is this machine)
TRAIN = ["--smoke", "--setups", "eager-sdpa", "--repeats", "1"]
# A run long enough to stop midway: first-matmul's repeats, each a fresh process that imports torch and no more
# (1.5 CPU-seconds; a train-compile setup's worker also imports transformers: 4.7).
SLOW_REPEATS = 10
SLOW_MATMUL = ["--smoke", "--repeats", str(SLOW_REPEATS)]
SLOW_TRAIN = ["--smoke", "--setups", "eager-sdpa,eager-eager", "--repeats", "3"]  # for a launch of one workload
GPUS = {"H100": 'partition = "h100", gres = "gpu:h100"', "L40S": 'partition = "l40s", gres = "gpu:l40s"'}


@pytest.fixture(scope="session")
def slurm():
    """The cluster: .ci/run's, else one started for this session; the tests skip saying why when none can run."""
    cluster = slurm_cluster.cluster_from_env()
    started = cluster is None
    if started:
        reason = slurm_cluster.missing()
        if reason:
            pytest.skip(f"no Slurm cluster: {reason}")
        cluster = slurm_cluster.start()
    yield cluster
    if started:
        cluster.stop()


@pytest.fixture
def forgetful(slurm):
    """The cluster with MinJobAge=2, as many sites run it: an ended job leaves squeue within seconds (set back after
    the test; the Slurm test files share one worker, so no other test sees it)."""
    slurm.set_min_job_age(2)
    try:
        yield slurm
    finally:
        slurm.set_min_job_age(slurm_cluster.MIN_JOB_AGE)


def plan_text(name: str, cells: list[tuple[str, list[str], list[str]]], gpus: dict[str, str] | None = None,
              extra: str = "") -> str:
    """A plan named `name` (each test its own: a sweep's jobs are found again by the sweep id in their comment)."""
    lines = [f"name = {json.dumps(name)}", "[slurm]", f"python = {json.dumps(PYTHON)}", "time_margin_minutes = 10",
             extra, "[slurm.gpus]"]
    lines += [f"{gpu} = {{ {entry} }}" for gpu, entry in (gpus or GPUS).items()]
    for workload, names, args in cells:
        lines += ["[[cell]]", f"workload = {json.dumps(workload)}", f"gpus = {json.dumps(names)}",
                  f"args = {json.dumps(args)}"]
    return "\n".join(lines) + "\n"


def write_plan(folder: Path, text: str) -> str:
    path = folder / "plan.toml"
    path.write_text(text)
    return str(path)


def env(cluster, extra: dict[str, str] | None = None) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_", "SLURM_"))}
    return {**clean, **cluster.env(), "GPUBENCH_POLL_S": "0.5", **(extra or {})}


def launcher(args: list[str], cluster, cwd: Path, extra: dict[str, str] | None = None, timeout: float = 600,
             nice: int = 0) -> Result:
    """`gpubench-launch ARGS` to its end. `nice`: the launcher's nice value, which its jobs run at (the test cluster's
    PropagatePrioProcess=1): a run that only has to last a while yields the cores to the other tests."""
    done = subprocess.run([str(BIN / "gpubench-launch"), *args], cwd=cwd, env=env(cluster, extra), text=True,
                          capture_output=True, timeout=timeout, preexec_fn=(lambda: os.nice(nice)) if nice else None)
    return Result(done.returncode, done.stdout, done.stderr)


def launcher_process(args: list[str], cluster, cwd: Path, extra: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "gpubench-launch"), *args], cwd=cwd, env=env(cluster, extra), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def sweep_jobs(cluster, sweep_name: str) -> list[dict[str, str]]:
    """Every job of the cluster's queue (ended ones included) whose comment names a sweep of this plan name."""
    out = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%i|%T|%r|%k"],
                         env={**os.environ, **cluster.env()}, capture_output=True, text=True, check=True).stdout
    jobs = []
    for line in out.splitlines():
        job_id, state, reason, comment = line.strip().split("|", 3)
        if f"sweep={sweep_name}-" in comment:
            jobs.append({"id": job_id, "state": state, "reason": reason, "comment": comment})
    return jobs


def live(jobs: list[dict[str, str]]) -> list[dict[str, str]]:
    return [j for j in jobs if j["state"] in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")]


def run_folders(root: Path) -> dict[str, Path]:
    """{'<workload>/<gpu>/<args key>/<run id>': folder} of every run folder a sweep wrote under root/<sweep id>."""
    found = {}
    for results in root.glob("*/*/*/*/*/results.jsonl"):
        folder = results.parent
        found[str(folder.relative_to(root).as_posix()).split("/", 1)[1]] = folder
    return found


def finished(folder: Path) -> str | None:
    status = None
    for line in (folder / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "run_finished":
            status = record["status"]
    return status


def slowly(probe, gap_s: float = 0.5):
    """`probe` for test_launch_support.wait_for, asked at most every gap_s (each asks the controller: squeue)."""
    import time

    def paced():
        time.sleep(gap_s)
        return probe()

    return paced
