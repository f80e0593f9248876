"""The environment block: what hardware and software a run ran on.

Read without importing torch (nvidia-smi, /proc, package metadata), so the parent process stays
light; each setup's worker adds the device it actually used. Only the GPUBENCH_* variables below
are read from the environment: no other variable's value can reach a record.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path

from gpubench.schema import Environment, GpuInfo

# Variables an image sets about itself, and a launcher sets about the machine it asked for.
IMAGE_VARS = {
    "image": "GPUBENCH_IMAGE",
    "image_version": "GPUBENCH_IMAGE_VERSION",
    "image_digest": "GPUBENCH_IMAGE_DIGEST",
    "git_commit": "GPUBENCH_GIT_COMMIT",
}
LAUNCHER_VARS = {
    "launcher": "GPUBENCH_LAUNCHER",
    "gpu_requested": "GPUBENCH_GPU_REQUESTED",
    "provider_job_id": "GPUBENCH_PROVIDER_JOB_ID",
}
# What a batch scheduler says it gave the job: ids, its partition, CPU and GPU counts (never a path or a user).
SCHEDULER_VARS = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_PARTITION",
                  "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE", "SLURM_CPUS_PER_TASK", "SLURM_GPUS_ON_NODE")
_SCHEDULER_VALUE = re.compile(r"^[A-Za-z0-9_.,()\[\]x-]{1,64}$")
ALWAYS_RECORDED = ("gpubench", "torch", "transformers", "numpy", "pydantic", "triton")


def _nvidia_smi() -> tuple[list[GpuInfo], str | None]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return [], None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total,uuid,driver_version", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return [], None
    gpus, driver = [], None
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        name, mem_mib, uuid, driver = parts[:4]
        try:
            memory_gb = round(float(mem_mib) * 2**20 / 1e9, 1)
        except ValueError:
            memory_gb = None
        gpus.append(GpuInfo(name=name, memory_gb=memory_gb, uuid=uuid))
    return gpus, driver


def torch_cuda_version() -> str | None:
    """torch.version.cuda, read from the installed file so torch itself is not imported."""
    spec = importlib.util.find_spec("torch")
    if not spec or not spec.origin:
        return None
    try:
        text = (Path(spec.origin).parent / "version.py").read_text()
    except OSError:
        return None
    match = re.search(r"^cuda(?:\s*:\s*[^=]+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return match.group(1) if match else None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _ram_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) * 1024 / 1e9, 1)
    except (OSError, ValueError):
        pass
    return None


def library_versions(names) -> dict[str, str | None]:
    versions = {}
    for name in dict.fromkeys([*ALWAYS_RECORDED, *names]):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpus_usable() -> int | None:
    """The CPUs this process may run on: its affinity mask (a scheduler's cgroup or binding), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def allocation() -> dict[str, str]:
    """The batch scheduler's own account of the job's resources, from its variables (SCHEDULER_VARS)."""
    found = {}
    for name in SCHEDULER_VARS:
        value = os.environ.get(name, "")
        if _SCHEDULER_VALUE.match(value):
            found[name] = value
    return found


def gpu_names() -> list[str]:
    return [gpu.name for gpu in _nvidia_smi()[0]]


def collect(libraries=(), engines: dict[str, str | None] | None = None) -> Environment:
    """The block: where the run ran (its price is the run's, on run_started: the runner resolves it). `engines` are
    the versions of engines built from source that no package metadata knows (servers/engines.py reads them),
    recorded among the libraries."""
    gpus, driver = _nvidia_smi()
    fields: dict[str, object] = {name: os.environ.get(var) or None for name, var in IMAGE_VARS.items()}
    for name, var in LAUNCHER_VARS.items():
        fields[name] = os.environ.get(var) or None
    return Environment(
        hostname_hash=hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12],
        gpus=gpus,
        gpu_count=len(gpus),
        driver_version=driver,
        cuda_version=torch_cuda_version(),
        cpu_model=cpu_model(),
        cpu_cores=os.cpu_count(),
        cpus_usable=cpus_usable(),
        allocation=allocation(),
        ram_gb=_ram_gb(),
        python=platform.python_version(),
        platform=platform.platform(),
        libraries={**library_versions(libraries), **(engines or {})},
        **fields,
    )
