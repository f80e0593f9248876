"""Where a run goes among owned machines: the `[docker]` table of a sweep plan (or `--docker-host URL` for one
launch), checked here without asking an engine.

    [docker]
    max_gpu_hours = 8.0                    # optional: the sweep's cap, worst case (each run to its safety net)
    cache_volume = "gpubench-cache"        # optional: the volume at /cache on each host (weights, compile caches)
    [docker.gpus]                          # the plan's GPU names -> the engine of the machine that has them
    H100 = { host = "ssh://bench@h100-box" }                       # as many of its GPUs as the run asks for
    L40S = { host = "unix:///var/run/docker.sock", devices = "1" }  # these GPUs: ids or UUIDs, "all", or "none"

A host runs one gpubench container at a time (the next waits): two benchmarks on one machine would measure each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field

from gpubench.registry import UnknownName

from ..errors import LaunchError, Table, read_table
from ..plan import norm_gpu

HOST = re.compile(r"^(unix:///\S+|ssh://\S+|tcp://\S+)$")
DEFAULT_CACHE_VOLUME = "gpubench-cache"  # as `gpubench run --docker`
HOST_GPUS = "all"  # a launch without --gpu: whatever GPUs the host has (none: its CPU, for --smoke)


def check_host(url: str, where: str) -> str:
    if not HOST.match(url or ""):
        raise LaunchError(f"{where}: {url!r} is not a Docker host: give unix:///path/docker.sock or ssh://user@host"
                          " (or tcp://host:port)")
    return url


@dataclass(frozen=True)
class HostGpu:
    name: str  # as the plan (or --gpu) spells it
    host: str  # the engine's URL
    devices: str | None = None  # "all", "none", "0,1": which GPUs; None: as many as the run asks for (NAME:N)

    def gpus(self, count: int, has_gpus: bool) -> str | None:
        """docker_run.parse_gpus' form for a run of `count` GPUs on a host that has a GPU runtime or not."""
        if not has_gpus or self.devices == "none":
            return None  # its CPU (a --smoke run; anything else was refused before)
        return self.devices or (HOST_GPUS if self.name == HOST_GPUS else str(count))


@dataclass(frozen=True)
class DockerConfig:
    gpus: dict[str, HostGpu]
    default_host: str | None = None  # --docker-host: every GPU name is on it
    cache_volume: str = DEFAULT_CACHE_VOLUME
    max_gpu_hours: float | None = None
    source: str = ""

    def gpu(self, name: str) -> HostGpu:
        """Where a GPU name is: the plan's mapping (case and punctuation as written, else one close match), or the
        one host of --docker-host."""
        if self.default_host is not None:
            return HostGpu(name=name, host=self.default_host)
        if name in self.gpus:
            return self.gpus[name]
        close = [g for key, g in self.gpus.items() if norm_gpu(key) == norm_gpu(name)]
        if len(close) == 1:
            return close[0]
        raise LaunchError(f"{self.source}: {UnknownName('GPU', name, sorted(self.gpus))} in [docker.gpus]"
                          " (add a line mapping it to a host)")

    @property
    def hosts(self) -> list[str]:
        return sorted({g.host for g in self.gpus.values()} | ({self.default_host} if self.default_host else set()))


class DockerTable(Table):
    """The [docker] table, as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "": "write the hosts as a [docker] table",
        "max_gpu_hours": "[docker] max_gpu_hours must be a positive number, not {value!r}",
        "cache_volume": "[docker] cache_volume must be a Docker volume name, not {value!r}",
        "gpus": "[docker.gpus] is missing: map each GPU name of the plan to a host,"
                " e.g. H100 = {{ host = \"ssh://me@h100-box\" }}",
    }

    max_gpu_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    cache_volume: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")] = DEFAULT_CACHE_VOLUME
    gpus: Annotated[dict[str, Any], Field(min_length=1)]


class GpuTable(Table):
    """One entry of [docker.gpus], as written."""

    REFUSED: ClassVar[dict[str, str]] = {
        "": "must be {{ host = \"ssh://user@host\" }}, with devices optional",
        "host": "must be {{ host = \"ssh://user@host\" }} (or unix:///path/docker.sock)",
        "devices": "devices must be \"all\", \"none\" or GPU ids like \"0,1\"",
    }

    host: Annotated[str, Field(min_length=1)]
    devices: Annotated[str, Field(pattern=r"^(all|none|[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*)$")] | None = None


def parse_docker(table: Any, where: str) -> DockerConfig:
    """The [docker] table, checked."""
    docker = read_table(DockerTable, table, where, "[docker]")
    gpus = {}
    for name, entry in docker.gpus.items():
        inside = f"{where}: [docker.gpus] {name}"
        gpu = read_table(GpuTable, entry, inside)
        gpus[name] = HostGpu(name=name, host=check_host(gpu.host, inside), devices=gpu.devices)
    return DockerConfig(gpus=gpus, cache_volume=docker.cache_volume, max_gpu_hours=docker.max_gpu_hours, source=where)


def one_host(url: str) -> DockerConfig:
    """`--docker-host URL`: every --gpu is on that one engine."""
    return DockerConfig(gpus={}, default_host=check_host(url, "--docker-host"), source="--docker-host")
