"""Where a run goes on a Slurm cluster: the `[slurm]` table of a sweep plan (or of a cluster file given to
`gpubench-launch NAME --slurm FILE`), and the sbatch options and job command of one run. Read and checked here
without a call; the batch script itself is batch.py's.

    [slurm]
    python = "/shared/gpubench/.venv/bin/python"   # where the job's gpubench comes from (or container = "pyxis"
                                                    #  / "apptainer": the workload's pinned image)
    time_margin_minutes = 10                        # --time = the workload's expected minutes + this
    max_gpu_hours = 4.0                             # optional: the cap, worst case (every job to --time)
    account = "bench"                               # optional: --account, --qos
    qos = "normal"
    cpus_per_gpu = 16                               # optional: over the study's own (the catalog's cpus_per_gpu)
    exclusive = true                                # optional: default true for timed runs, false for --smoke
    array_throttle = 4                              # a sweep's array: at most this many tasks at once (%4)
    container_mounts = ["/shared/hf:/root/.cache/huggingface"]   # pyxis --container-mounts / apptainer --bind
    srun_args = ["--mpi=none"]                      # optional: more srun options, as given
    sbatch_args = ["--constraint=h100_80gb"]        # optional: more sbatch options, as given
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
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from gpubench.registry import UnknownName

from ..errors import LaunchError, Table, read_table

TABLE = "slurm"  # the table of a cluster file (--slurm FILE) or a sweep plan
CONTAINERS = ("pyxis", "apptainer")
SIGINT_BEFORE_LIMIT_S = 60  # --signal=B:INT@60: the run is interrupted (and stores) before Slurm kills it
SMOKE_CPUS_PER_GPU = 1  # a --smoke run is CPU-sized: Slurm's own default, so a smoke sweep's jobs share a node
DEFAULT_ARRAY_THROTTLE = 4


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


def enroot_image(image: str) -> str:
    """An image reference as pyxis' --container-image takes it: enroot's `[USER@][REGISTRY#]IMAGE[:TAG]`, whose
    registry ends at a `#` (`ghcr.io/gpubench/x:1` would be read as a Docker Hub repository named so). A first
    component with a `.` or `:`, or `localhost`, is a registry (Docker's rule); a squashfs path stays as it is."""
    if "#" in image or image.startswith(("/", "./")):
        return image
    scheme, sep, rest = image.partition("://")
    if not sep:
        scheme, rest = "", image
    head, slash, tail = rest.partition("/")
    if slash and ("." in head or ":" in head or head == "localhost"):
        rest = f"{head}#{tail}"
    return f"{scheme}://{rest}" if scheme else rest


@dataclass(frozen=True)
class SlurmConfig:
    gpus: dict[str, SlurmGpu]
    python: str | None = None
    container: str | None = None
    time_margin_minutes: int = 10
    max_gpu_hours: float | None = None
    sbatch_args: tuple[str, ...] = ()
    source: str = ""
    account: str | None = None
    qos: str | None = None
    cpus_per_gpu: int | None = None  # the site's, over the study's own
    exclusive: bool | None = None  # None: exclusive for timed runs, shared for --smoke
    array_throttle: int = DEFAULT_ARRAY_THROTTLE
    container_mounts: tuple[str, ...] = ()
    srun_args: tuple[str, ...] = ()

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

    def cpus(self, spec, smoke: bool, gpu_count: int) -> int:
        """The CPUs a run's job asks for: per GPU the site's cpus_per_gpu, else the study's (the catalog), or one
        for a CPU-sized --smoke run; times its GPUs."""
        per_gpu = self.cpus_per_gpu or (SMOKE_CPUS_PER_GPU if smoke else spec.cpus_per_gpu)
        return per_gpu * max(1, gpu_count)

    def is_exclusive(self, smoke: bool) -> bool:
        """A timed run has its node to itself (another job's load is noise in its numbers); a smoke run shares."""
        return (not smoke) if self.exclusive is None else self.exclusive

    def sbatch_options(self, gpu: SlurmGpu, count: int, minutes: int, cpus: int, exclusive: bool) -> list[str]:
        """What a run asks the scheduler for; the same for every task of an array."""
        return [*gpu.request(count), f"--time={minutes}", "--nodes=1", "--ntasks=1", f"--cpus-per-task={cpus}",
                *(["--exclusive"] if exclusive else []),
                *([f"--account={self.account}"] if self.account else []),
                *([f"--qos={self.qos}"] if self.qos else []),
                f"--signal=B:INT@{SIGINT_BEFORE_LIMIT_S}", *self.sbatch_args]

    def job_command(self, command: str, image: str, results_dir: str, store_url: str | None, cpus: int) -> list[str]:
        """The job's `gpubench run ...` (as a Runcrate job runs it), started the cluster's way, writing its run
        folder under results_dir and uploading it to store_url itself. srun is given the job's CPUs again: since
        Slurm 22.05 a step does not inherit sbatch's --cpus-per-task."""
        words = shlex.split(command)
        if words[:2] != ["gpubench", "run"]:
            raise LaunchError(f"a Slurm job runs `gpubench run ...`, not {command!r}")
        run = [*words[1:], "--results-dir", results_dir, *(["--store", store_url] if store_url else [])]
        srun = ["srun", "--ntasks=1", f"--cpus-per-task={cpus}", *self.srun_args]
        if self.container == "pyxis":
            mounts = ",".join([f"{results_dir}:{results_dir}", *self.container_mounts])
            return [*srun, f"--container-image={enroot_image(image)}", f"--container-mounts={mounts}", "gpubench",
                    *run]
        if self.container == "apptainer":
            binds = [arg for mount in (results_dir, *self.container_mounts) for arg in ("--bind", mount)]
            return [*srun, "apptainer", "exec", "--nv", *binds, f"docker://{image}", "gpubench", *run]
        return [*srun, self.python or "python3", "-m", "gpubench", *run]


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_SITE_NAME = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class SlurmTable(Table):
    """The [slurm] table, as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "": "write the cluster as a [slurm] table",
        "container": f"[slurm] container must be one of {', '.join(CONTAINERS)}, not {{value!r}}",
        "python": "the Slurm Python must be an absolute path on the nodes, not {value!r}",
        "time_margin_minutes": "[slurm] time_margin_minutes must be a whole number from 0 to 1440",
        "max_gpu_hours": "[slurm] max_gpu_hours must be a positive number, not {value!r}",
        "sbatch_args": "[slurm] sbatch_args must be a list of sbatch options, e.g. [\"--constraint=x\"]",
        "srun_args": "[slurm] srun_args must be a list of srun options, e.g. [\"--mpi=pmix\"]",
        "account": "[slurm] account must be a Slurm account name, not {value!r}",
        "qos": "[slurm] qos must be a Slurm QoS name, not {value!r}",
        "cpus_per_gpu": "[slurm] cpus_per_gpu must be a whole number from 1 to 512, not {value!r}",
        "exclusive": "[slurm] exclusive must be true or false, not {value!r}",
        "array_throttle": "[slurm] array_throttle must be a whole number from 1 to 10000, not {value!r}",
        "container_mounts": "[slurm] container_mounts must be a list of SRC:DST[:FLAGS] with absolute paths,"
                            " e.g. [\"/shared/hf:/root/.cache/huggingface:ro\"]",
        "gpus": "[slurm.gpus] is missing: map each GPU name of the plan to a partition,"
                " e.g. H100 = {{ partition = \"h100\", gres = \"gpu:h100\" }}",
    }

    container: Literal[CONTAINERS] | None = None
    python: Annotated[str, Field(pattern="^/")] | None = None
    time_margin_minutes: Annotated[int, Field(ge=0, le=1440)] = 10
    max_gpu_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    account: Annotated[str, _SITE_NAME] | None = None
    qos: Annotated[str, _SITE_NAME] | None = None
    cpus_per_gpu: Annotated[int, Field(ge=1, le=512)] | None = None
    exclusive: bool | None = None
    array_throttle: Annotated[int, Field(ge=1, le=10000)] = DEFAULT_ARRAY_THROTTLE
    container_mounts: list[Annotated[str, Field(pattern=r"^/[^,:]*:/[^,:]*(:[a-z+]+)?$")]] = []
    srun_args: list[Annotated[str, Field(pattern="^--")]] = []
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
    if slurm.container_mounts and slurm.container is None:
        raise LaunchError(f"{where}: [slurm] container_mounts are for a container: set container = \"pyxis\" or"
                          " \"apptainer\" (a Python environment on the nodes sees their filesystems as they are)")
    gpus = {}
    for name, entry in slurm.gpus.items():
        gpu = read_table(GpuTable, entry, f"{where}: [slurm.gpus] {name}")
        gpus[name] = SlurmGpu(name=name, partition=gpu.partition, gres=gpu.gres)
    container = None if slurm.python else slurm.container
    return SlurmConfig(gpus=gpus, python=slurm.python, container=container,
                       time_margin_minutes=slurm.time_margin_minutes, max_gpu_hours=slurm.max_gpu_hours,
                       sbatch_args=tuple(slurm.sbatch_args), source=where, account=slurm.account, qos=slurm.qos,
                       cpus_per_gpu=slurm.cpus_per_gpu, exclusive=slurm.exclusive,
                       array_throttle=slurm.array_throttle,
                       container_mounts=tuple(slurm.container_mounts) if container else (),
                       srun_args=tuple(slurm.srun_args))


def time_limit_minutes(expected_minutes: float, margin: int) -> int:
    """sbatch --time: the run's expected minutes plus the margin (the safety net, as max_runtime_minutes is)."""
    return max(1, math.ceil(expected_minutes + margin))


def gpu_hours(minutes: int, gpu_count: int) -> float:
    """The most a job can use: its --time on its GPUs."""
    return minutes / 60 * gpu_count


COMMENT_PREFIX = "gpubench"


def comment_for(tags: dict[str, str], run_id: str | None = None, array: str | None = None) -> str:
    """The job's --comment: which run (or, for an array, which sweep and array) it is, for a person reading squeue
    and for finding it again."""
    parts = [COMMENT_PREFIX]
    if run_id:
        parts.append(f"run={run_id}")
    if tags.get("gpubench_sweep"):
        parts.append(f"sweep={tags['gpubench_sweep']}")
        if tags.get("gpubench_cell") and not array:
            parts.append(f"cell={tags['gpubench_cell']}")
    if array:
        parts.append(f"array={array}")
    return ",".join(parts)


def comment_fields(comment: str) -> dict[str, str]:
    """A gpubench job's --comment read back ({} for another job's): run (a job of its own), sweep, cell, array."""
    head, _, rest = comment.partition(",")
    if head != COMMENT_PREFIX:
        return {}
    return dict(part.partition("=")[::2] for part in rest.split(",") if "=" in part)
