"""`gpubench-launch WORKLOAD --slurm CLUSTER.toml --gpu NAME` against the real controller: one batch job per --gpu,
its records streamed and its folder written by the job; the dry run shows each job's sbatch options and command,
the pyxis way included (this cluster has no pyxis: its script text is what is checked)."""

from __future__ import annotations

import json
from datetime import datetime

from slurm_support import GPUS, PYTHON, TRAIN, launcher, slurm

from gpubench import __version__, exit_codes

__all__ = ["slurm"]


def _cluster_file(folder, way: str) -> str:
    path = folder / "cluster.toml"
    lines = ["[slurm]", way, "time_margin_minutes = 3", "[slurm.gpus]"]
    lines += [f"{gpu} = {{ {entry} }}" for gpu, entry in GPUS.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_one_run_on_each_gpu(slurm, tmp_path):
    cluster = _cluster_file(tmp_path, f"python = {json.dumps(PYTHON)}")
    result = launcher(["train-compile", "--slurm", cluster, "--gpu", "H100", "--gpu", "L40S", *TRAIN[:3]],
                      slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    runs = {r["run_id"] for r in result.records()}
    assert len(runs) == 2
    for run_id in runs:
        folder = tmp_path / "gpubench-results" / run_id
        facts = json.loads((folder / "job.json").read_text())
        assert facts["state"] == "COMPLETED" and facts["time_limit_minutes"] == 5  # 2 smoke minutes + 3
        stored = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
        assert stored == [r for r in result.records() if r["run_id"] == run_id]  # streamed = what the job wrote
        # Slurm's output is beside the results (and so uploaded with them), the batch script too.
        assert (folder / f"slurm-{facts['job_id']}.out").is_file() and (folder / "job.sbatch").is_file()
        assert facts["output"] == str(folder.resolve() / f"slurm-{facts['job_id']}.out")
        assert datetime.fromisoformat(facts["started_at"]) <= datetime.fromisoformat(facts["ended_at"])
        # The CPUs the job was given are in its environment block: Slurm's account and the process's own mask.
        env = stored[0]["environment"]
        assert env["allocation"]["SLURM_CPUS_ON_NODE"] == "1" and env["allocation"]["SLURM_JOB_ID"] == facts["job_id"]
        assert env["cpus_usable"] >= 1
    assert sorted(json.loads((tmp_path / "gpubench-results" / r / "job.json").read_text())["partition"]
                  for r in runs) == ["h100", "l40s"]


def test_dry_run_shows_the_pyxis_job(slurm, tmp_path):
    """enroot reads a registry only before a '#' (pyxis' --container-image=[USER@][REGISTRY#]IMAGE[:TAG]): the job
    asks ghcr.io for gpubench/NAME, not Docker Hub for ghcr.io/gpubench/NAME. A smoke run shares its node, 1 CPU."""
    cluster = _cluster_file(tmp_path, 'container = "pyxis"')
    result = launcher(["train-compile", "--slurm", cluster, "--gpu", "H100", "--smoke", "--dry-run"], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    out = " ".join(result.stdout.split())  # the console folds long lines
    assert "the job's gpubench: the workload's pinned image through pyxis" in out
    assert "--partition=h100 --gres=gpu:h100:1 --time=5 --nodes=1 --ntasks=1 --cpus-per-task=1 --signal=B:INT@60" in out
    assert "--exclusive" not in out
    results = str((tmp_path / "gpubench-results").resolve())
    assert (f"runs srun --ntasks=1 --cpus-per-task=1 --container-image=ghcr.io#gpubench/train-compile:{__version__}"
            f" --container-mounts={results}:{results} gpubench run train-compile --smoke --results-dir {results}"
            ) in out
    assert "waits for --gres=gpu:h100:1 in partition h100, then up to 5 min" in out
    assert "dry run: nothing was submitted" in out
    assert not (tmp_path / "gpubench-results").exists()


def test_a_timed_run_has_the_studys_cpus_its_node_and_the_sites_options(slurm, tmp_path):
    """A full-size run asks for the study's CPUs per GPU (the catalog: 12 for embed) and the node to itself; the
    site's account, QoS, srun options and container mounts go where pyxis and sbatch take them."""
    cluster = _cluster_file(tmp_path, "\n".join([
        'container = "pyxis"', 'account = "bench"', 'qos = "high"', 'srun_args = ["--mpi=none"]',
        'container_mounts = ["/shared/hf:/root/.cache/huggingface:ro"]', "cpus_per_gpu = 2"]))
    result = launcher(["embed", "--slurm", cluster, "--gpu", "L40S", "--setups", "bge-small-128", "--weights",
                       "random", "--dry-run"], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    out = " ".join(result.stdout.split())
    assert "--cpus-per-task=2 --exclusive --account=bench --qos=high --signal=B:INT@60" in out
    results = str((tmp_path / "gpubench-results").resolve())
    assert (f"runs srun --ntasks=1 --cpus-per-task=2 --mpi=none --container-image=ghcr.io#gpubench/embed:{__version__}"
            f" --container-mounts={results}:{results},/shared/hf:/root/.cache/huggingface:ro gpubench run embed") in out
    # Without the site's cpus_per_gpu, the study's 12 do not fit this cluster's nodes: one line before any sbatch.
    plain = _cluster_file(tmp_path, 'container = "pyxis"')
    refused = launcher(["embed", "--slurm", plain, "--gpu", "L40S", "--dry-run"], slurm, tmp_path)
    assert refused.code == exit_codes.BAD_INPUT
    [line] = refused.stderr.strip().splitlines()
    assert "a job on L40S asks for 12 CPUs (--cpus-per-task), but the nodes of partition 'l40s'" in line, line
    assert "set [slurm] cpus_per_gpu" in line


def test_the_gpu_hours_cap_is_kept_before_anything_is_submitted(slurm, tmp_path):
    """A cluster file's max_gpu_hours holds for one run as for a sweep: the dry run shows the worst case against it,
    and a run whose --time could pass it is refused in one line, with nothing submitted or written."""
    cluster = _cluster_file(tmp_path, f"python = {json.dumps(PYTHON)}\nmax_gpu_hours = 0.0001")
    dry = launcher(["train-compile", "--slurm", cluster, "--gpu", "H100", *TRAIN[:3], "--dry-run"], slurm, tmp_path)
    assert dry.code == exit_codes.BAD_INPUT
    assert "to submit 1 job: at most 0.08 GPU-hours (each to its --time); max_gpu_hours 0.0001" in " ".join(
        dry.stdout.split())
    assert "worst case 0.08 GPU-hours (each job to its --time) is over [slurm] max_gpu_hours 0.0001" in dry.stderr
    before = set(slurm.squeue())
    real = launcher(["train-compile", "--slurm", cluster, "--gpu", "H100", *TRAIN[:3]], slurm, tmp_path)
    assert real.code == exit_codes.BAD_INPUT
    [line] = real.stderr.strip().splitlines()
    assert "max_gpu_hours 0.0001; nothing was submitted" in line
    assert set(slurm.squeue()) == before and not (tmp_path / "gpubench-results").exists()


def test_dry_run_shows_the_apptainer_job(slurm, tmp_path):
    cluster = _cluster_file(tmp_path, 'container = "apptainer"')
    result = launcher(["embed", "--slurm", cluster, "--gpu", "L40S", "--smoke", "--dry-run"], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    out = " ".join(result.stdout.split())
    results = str((tmp_path / "gpubench-results").resolve())
    assert (f"runs srun --ntasks=1 --cpus-per-task=1 apptainer exec --nv --bind {results}"
            f" docker://ghcr.io/gpubench/embed:{__version__}"
            f" gpubench run embed --smoke --results-dir {results}") in out
    assert "--partition=l40s --gres=gpu:l40s:1" in out
