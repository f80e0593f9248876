"""`gpubench-launch WORKLOAD --slurm CLUSTER.toml --gpu NAME` against the real controller: one batch job per --gpu,
its records streamed and its folder written by the job; the dry run shows each job's sbatch options and command,
the pyxis way included (this cluster has no pyxis: its script text is what is checked)."""

from __future__ import annotations

import json

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
    assert sorted(json.loads((tmp_path / "gpubench-results" / r / "job.json").read_text())["partition"]
                  for r in runs) == ["h100", "l40s"]


def test_dry_run_shows_the_pyxis_job(slurm, tmp_path):
    cluster = _cluster_file(tmp_path, 'container = "pyxis"')
    result = launcher(["train-compile", "--slurm", cluster, "--gpu", "H100", "--smoke", "--dry-run"], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    out = " ".join(result.stdout.split())  # the console folds long lines
    assert "the job's gpubench: the workload's pinned image through pyxis" in out
    assert "--partition=h100 --gres=gpu:h100:1 --time=5" in out
    results = str((tmp_path / "gpubench-results").resolve())
    assert (f"runs srun --ntasks=1 --container-image=ghcr.io/gpubench/train-compile:{__version__}"
            f" --container-mounts={results}:{results} gpubench run train-compile --smoke --results-dir {results}"
            ) in out
    assert "waits for --gres=gpu:h100:1 in partition h100, then up to 5 min" in out
    assert "dry run: nothing was submitted" in out
    assert not (tmp_path / "gpubench-results").exists()


def test_dry_run_shows_the_apptainer_job(slurm, tmp_path):
    cluster = _cluster_file(tmp_path, 'container = "apptainer"')
    result = launcher(["embed", "--slurm", cluster, "--gpu", "L40S", "--smoke", "--dry-run"], slurm, tmp_path)
    assert result.code == exit_codes.OK, result.stderr
    out = " ".join(result.stdout.split())
    results = str((tmp_path / "gpubench-results").resolve())
    assert (f"runs srun --ntasks=1 apptainer exec --nv --bind {results} docker://ghcr.io/gpubench/embed:{__version__}"
            f" gpubench run embed --smoke --results-dir {results}") in out
    assert "--partition=l40s --gres=gpu:l40s:1" in out
