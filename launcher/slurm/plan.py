"""Where a run goes on a Slurm cluster: the `[slurm]` table of a sweep plan (or of a cluster file given to
`gpubench-launch NAME --slurm FILE`), and the batch script of one run. Read and checked here without a call.

    [slurm]
    python = "/shared/gpubench/.venv/bin/python"   # where the job's gpubench comes from (or container = "pyxis"
                                                    #  / "apptainer": the workload's pinned image)
    time_margin_minutes = 10                        # --time = the workload's expected minutes + this
    max_gpu_hours = 4.0                             # optional: the sweep's cap, worst case (every job to --time)
    sbatch_args = ["--account=bench"]               # optional: more sbatch options, as given
    [slurm.gpus]                                    # the plan's GPU names -> partition and GPU request
    H100 = { partition = "h100", gres = "gpu:h100" }   # --gres=gpu:h100:N
    L40S = { partition = "l40s" }                      # --gpus=N (gres = "" asks for none: the partition is the GPU)

The job runs the same `gpubench run ...` a Runcrate job runs, through `srun` (so Ctrl-C's scancel --signal=INT and
the time limit's early SIGINT reach it and it stores what it measured), writing its run folder itself on the
shared filesystem and, with --store, uploading it itself.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from gpubench.registry import UnknownName

from ..errors import LaunchError, Table, read_table

CONTAINERS = ("pyxis", "apptainer")
SIDE_DIR = ".slurm"  # beside the run folders: each run's batch script, Slurm output file and exit code
SIGINT_BEFORE_LIMIT_S = 60  # --signal=INT@60: the run is interrupted (and stores) before Slurm kills it


@dataclass(frozen=True)
class SlurmGpu:
    name: str  # as the plan spells it
    partition: str
    gres: str | None  # "gpu:h100" -> --gres=gpu:h100:N; "" -> no GPU request; None -> --gpus=N

    def request(self, count: int) -> list[str]:
        args = [f"--partition={self.partition}"]
        if self.gres is None:
            args.append(f"--gpus={count}")
        elif self.gres:
            args.append(f"--gres={self.gres}:{count}")
        return args


@dataclass(frozen=True)
class SlurmConfig:
    gpus: dict[str, SlurmGpu]
    python: str | None = None
    container: str | None = None
    time_margin_minutes: int = 10
    max_gpu_hours: float | None = None
    sbatch_args: tuple[str, ...] = ()
    source: str = ""

    def gpu(self, name: str) -> SlurmGpu:
        """The mapping of a plan's GPU name (case and punctuation as written, else one close match)."""
        if name in self.gpus:
            return self.gpus[name]
        close = [g for key, g in self.gpus.items() if _norm(key) == _norm(name)]
        if len(close) == 1:
            return close[0]
        raise LaunchError(f"{self.source}: {UnknownName('GPU', name, sorted(self.gpus))} in [slurm.gpus]"
                          " (add a line mapping it to a partition)")

    @property
    def way(self) -> str:
        """Where the job's gpubench comes from, as the plan prints it."""
        if self.container == "pyxis":
            return "the workload's pinned image through pyxis (srun --container-image)"
        if self.container == "apptainer":
            return "the workload's pinned image through Apptainer (apptainer exec docker://...)"
        return f"the Python environment {self.python} on the nodes"

    def job_command(self, command: str, image: str, results_dir: str, store_url: str | None) -> list[str]:
        """The job's `gpubench run ...` (as a Runcrate job runs it), started the cluster's way, writing its run
        folder under results_dir and uploading it to store_url itself."""
        words = shlex.split(command)
        if words[:2] != ["gpubench", "run"]:
            raise LaunchError(f"a Slurm job runs `gpubench run ...`, not {command!r}")
        run = [*words[1:], "--results-dir", results_dir, *(["--store", store_url] if store_url else [])]
        if self.container == "pyxis":
            return ["srun", "--ntasks=1", f"--container-image={image}",
                    f"--container-mounts={results_dir}:{results_dir}", "gpubench", *run]
        if self.container == "apptainer":
            return ["srun", "--ntasks=1", "apptainer", "exec", "--nv", "--bind", results_dir,
                    f"docker://{image}", "gpubench", *run]
        return ["srun", "--ntasks=1", self.python or "python3", "-m", "gpubench", *run]


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


class SlurmTable(Table):
    """The [slurm] table, as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "": "write the cluster as a [slurm] table",
        "container": f"[slurm] container must be one of {', '.join(CONTAINERS)}, not {{value!r}}",
        "python": "the Slurm Python must be an absolute path on the nodes, not {value!r}",
        "time_margin_minutes": "[slurm] time_margin_minutes must be a whole number from 0 to 1440",
        "max_gpu_hours": "[slurm] max_gpu_hours must be a positive number, not {value!r}",
        "sbatch_args": "[slurm] sbatch_args must be a list of sbatch options, e.g. [\"--account=x\"]",
        "gpus": "[slurm.gpus] is missing: map each GPU name of the plan to a partition,"
                " e.g. H100 = {{ partition = \"h100\", gres = \"gpu:h100\" }}",
    }

    container: Literal[CONTAINERS] | None = None
    python: Annotated[str, Field(pattern="^/")] | None = None
    time_margin_minutes: Annotated[int, Field(ge=0, le=1440)] = 10
    max_gpu_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    sbatch_args: list[Annotated[str, Field(pattern="^--")]] = []
    gpus: Annotated[dict[str, Any], Field(min_length=1)]


class GpuTable(Table):
    """One entry of [slurm.gpus], as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "": "must be {{ partition = \"NAME\" }}, with gres optional",
        "partition": "must be {{ partition = \"NAME\" }}, with gres optional",
        "gres": "gres must be like \"gpu:h100\" (or \"\" for none)",
    }

    partition: Annotated[str, Field(min_length=1)]
    gres: Annotated[str, Field(pattern="^(gpu|$)")] | None = None


def parse_slurm(table: Any, where: str, python: str | None = None) -> SlurmConfig:
    """The [slurm] table, checked; `python` (--slurm-python) chooses the Python-environment way over the table's."""
    if python and isinstance(table, dict):
        table = {**table, "python": python}
    slurm = read_table(SlurmTable, table, where, "[slurm]")
    if slurm.python is None and slurm.container is None:
        raise LaunchError(f"{where}: say where the job's gpubench comes from: [slurm] python = \"/path/bin/python\""
                          " (or --slurm-python), or container = \"pyxis\" / \"apptainer\"")
    gpus = {}
    for name, entry in slurm.gpus.items():
        gpu = read_table(GpuTable, entry, f"{where}: [slurm.gpus] {name}")
        gpus[name] = SlurmGpu(name=name, partition=gpu.partition, gres=gpu.gres)
    container = None if slurm.python else slurm.container
    return SlurmConfig(gpus=gpus, python=slurm.python, container=container,
                       time_margin_minutes=slurm.time_margin_minutes, max_gpu_hours=slurm.max_gpu_hours,
                       sbatch_args=tuple(slurm.sbatch_args), source=where)


def time_limit_minutes(expected_minutes: float, margin: int) -> int:
    """sbatch --time: the run's expected minutes plus the margin (the safety net, as max_runtime_minutes is)."""
    return max(1, math.ceil(expected_minutes + margin))


@dataclass
class BatchJob:
    """One run's sbatch job: the script, where its output goes, what identifies it in squeue."""

    run_id: str
    side: Path  # <results dir>/.slurm/<run id>/
    name: str
    comment: str
    options: list[str]
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def script_path(self) -> Path:
        return self.side / "job.sbatch"

    def output(self, job_id: str) -> Path:
        return self.side / f"slurm-{job_id}.out"

    def exit_file(self, job_id: str) -> Path:
        return self.side / f"exit-{job_id}"

    def script(self) -> str:
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in self.options)]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        lines += [shlex.join(self.command), "rc=$?",
                  f"echo \"$rc\" > {shlex.quote(str(self.side))}/exit-\"$SLURM_JOB_ID\"", "exit \"$rc\""]
        return "\n".join(lines) + "\n"

    def sbatch_line(self) -> str:
        return shlex.join(["sbatch", "--parsable", str(self.script_path)])


def batch_job(slurm: SlurmConfig, gpu: SlurmGpu, count: int, run_id: str, results_dir: Path, command: str,
              image: str, minutes: int, env: dict[str, str], store_url: str | None, tags: dict[str, str]) -> BatchJob:
    side = results_dir / SIDE_DIR / run_id
    comment = comment_for(run_id, tags)
    options = [f"--job-name=gpubench-{run_id}", f"--comment={comment}", *gpu.request(count), f"--time={minutes}",
               "--nodes=1", "--ntasks=1", f"--output={side}/slurm-%j.out", f"--signal=INT@{SIGINT_BEFORE_LIMIT_S}",
               *slurm.sbatch_args]
    return BatchJob(run_id=run_id, side=side, name=f"gpubench-{run_id}", comment=comment, options=options,
                    command=slurm.job_command(command, image, str(results_dir), store_url), env=env)


def batch_for(plan, run, store) -> BatchJob:
    """The batch job of one run of a LaunchPlan whose via is "slurm"."""
    choice = run.candidates[0]
    return batch_job(plan.slurm, plan.slurm.gpu(choice.requested), choice.count, run.run_id,
                     Path(plan.results_dir).resolve(), plan.command, plan.image, plan.max_runtime_minutes, run.env,
                     store.url if store else None, plan.extra_tags)


def describe_batch(plan, run, store) -> list[str]:
    """What --dry-run prints of one run's batch job: its sbatch options, its command, what it waits for."""
    batch = batch_for(plan, run, store)
    gpu = plan.slurm.gpu(run.candidates[0].requested)
    request = " ".join(gpu.request(run.candidates[0].count)[1:]) or "a node"
    return [f"  sbatch {' '.join(batch.options)}", f"  runs   {' '.join(batch.command)}",
            f"  waits  for {request} in partition {gpu.partition}, then up to {plan.max_runtime_minutes} min"]


COMMENT_PREFIX = "gpubench"


def comment_for(run_id: str, tags: dict[str, str]) -> str:
    """The job's --comment: which run (and sweep and cell) it is, found again by squeue after a launcher died."""
    parts = [COMMENT_PREFIX, f"run={run_id}"]
    if tags.get("gpubench_sweep"):
        parts += [f"sweep={tags['gpubench_sweep']}", f"cell={tags['gpubench_cell']}"]
    return ",".join(parts)


def comment_fields(comment: str) -> dict[str, str]:
    head, _, rest = comment.partition(",")
    if head != COMMENT_PREFIX:
        return {}
    return dict(part.partition("=")[::2] for part in rest.split(",") if "=" in part)
