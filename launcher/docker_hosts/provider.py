"""Owned GPU machines reached through their Docker engines, as a provider (provider.Provider). `--docker-host URL`
(or a sweep plan's `[docker]` table, `plan.py`) says which engine; each run is the workload's pinned image as one
container there (`container.py`), one at a time per host. Nothing is billed: a sweep's cap is GPU-hours (each run to
its safety net). Containers carry their run id, sweep, cell and launcher as labels: a sweep's next call follows those
an earlier call left, and status, logs, cancel and cleanup find them by run id (`manage.py`)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from ..errors import LaunchError
from ..provider import GPU_HOURS, Leftovers, Provider
from .plan import HOST_GPUS, DockerConfig, check_host, one_host, parse_docker


def need_sdk(ssh: bool) -> None:
    """The docker SDK (and paramiko for ssh://) come with the `docker` extra: one line when they are missing."""
    from gpubench.extras import MissingExtra, require

    try:
        require("docker", "gpubench-launch --docker-host", ("docker", "paramiko") if ssh else ("docker",))
    except MissingExtra as exc:
        raise LaunchError(str(exc)) from None


class _Turn:
    """A host's one container at a time: held while a run's container lives (release() when it is gone)."""

    def __init__(self, provider: DockerHosts, host: str, following: bool):
        self.provider, self.host, self.following = provider, host, following

    def release(self) -> None:
        if self.following:
            self.provider._following[self.host] -= 1
        else:
            self.provider._busy[self.host] = False


class DockerHosts(Provider):
    name = "docker"
    title = "Docker hosts"
    reached_by = "DOCKER_HOST, or a live launch's host"
    cap_unit = GPU_HOURS
    gpu_optional = True  # a launch without --gpu runs on whatever the host has

    def __init__(self, config: DockerConfig | None):
        self.config = config  # None: looking runs up by id only
        self.limit = config.max_gpu_hours if config else None
        self.gpu_hosts: dict[str, bool] = {}  # host -> whether its engine can give containers GPUs (check())
        self._busy: dict[str, bool] = {}
        self._following: dict[str, int] = {}
        self.lookup: list[str] = []  # the hosts to look runs up on (for_run)

    # --- choosing it -----------------------------------------------------------------------------------------------
    @classmethod
    def from_launch(cls, options) -> DockerHosts:
        config = one_host(options.provider_options["docker_host"])
        if len(options.gpus) > 1:
            raise LaunchError("--docker-host runs one run: give one --gpu (a sweep plan's [docker] table maps several"
                              " GPU names to hosts)")
        if not options.dry_run:  # a dry run needs no engine, nor its SDK
            need_sdk(any(h.startswith("ssh://") for h in config.hosts))
        return cls(config)

    @classmethod
    def from_plan(cls, table: Any, plan, options) -> DockerHosts:
        config = parse_docker(table, f"plan {plan.source}")
        if not options.dry_run:
            need_sdk(any(h.startswith("ssh://") for h in config.hosts))
        return cls(config)

    @classmethod
    def for_run(cls, evidence: dict[str, Any]) -> DockerHosts | None:
        """Containers are looked up on the host the run's evidence names, DOCKER_HOST's, and the hosts of the live
        launches this host's state files name; None when there is none."""
        from ..state import all_states

        named = [evidence["host"]] if evidence.get("provider") == cls.name and evidence.get("host") else []
        hosts = [*named, *([os.environ["DOCKER_HOST"]] if os.environ.get("DOCKER_HOST") else []),
                 *(s["host"] for s in all_states() if s.get("provider") == cls.name and s.get("host"))]
        hosts = [check_host(h, "a run's Docker host") for h in dict.fromkeys(hosts)]
        if not hosts:
            return None
        try:
            need_sdk(any(h.startswith("ssh://") for h in hosts))
        except LaunchError:
            if named:
                raise
            return None  # DOCKER_HOST set for something else, and no SDK here: nothing of ours to look up
        found = cls(None)
        found.lookup = hosts
        return found

    # --- what a run needs against what it offers -------------------------------------------------------------------
    def default_gpus(self, spec, smoke: bool) -> list[str]:
        if not smoke:
            raise LaunchError("name the host's GPU: --gpu NAME[:N] (the study's needs are checked against it, and its"
                              " results say what they ran on); --smoke runs on whatever the host has")
        return [HOST_GPUS]

    async def offer(self, gpu: str, spec):
        from ..plan import GpuChoice, split_count

        name, count = split_count(gpu, spec.gpu_count)
        mapped = self.config.gpu(name)
        return GpuChoice(requested=mapped.name, gpu_type=mapped.name, count=count, rows=())

    def shape(self, plan, options) -> None:
        from ..plan import new_runs

        plan.provider, plan.via, plan.settings = self.name, None, self.config
        plan.runs = new_runs(plan.workload, [c for run in plan.runs for c in run.candidates], each=True)

    async def check(self, plans: list, dry_run: bool) -> str | None:
        """Each host's engine answers and can give the runs GPUs (a --smoke run on a host without GPUs uses its
        CPU, and says so). A dry run asks no engine."""
        if dry_run:
            return "dry run: no engine was asked (the hosts, their GPUs and the image are checked when it runs)"
        notes = []
        for host in sorted({p.settings.gpu(r.candidates[0].requested).host for p in plans for r in p.runs}):
            self.gpu_hosts[host] = await asyncio.to_thread(self._ask, host)
            if self.gpu_hosts[host]:
                continue
            full = [p for p in plans if not p.smoke and any(p.settings.gpu(r.candidates[0].requested).host == host
                                                             for r in p.runs)]
            if full:
                raise LaunchError(f"{host}: this Docker engine has no GPU runtime (nvidia), and {full[0].workload.name}"
                                  " runs full size: install the NVIDIA Container Toolkit there, or use --smoke")
            notes.append(f"{host} has no GPU runtime: --smoke runs on its CPU")
        for line in notes:
            sys.stderr.write(f"gpubench-launch: {line}\n")
        return "; ".join(notes) or None

    @staticmethod
    def _ask(host: str) -> bool:
        from gpubench.run import docker_run

        try:
            client = docker_run.connect(30, host)
        except docker_run.DockerUnavailable as exc:
            raise LaunchError(exc.reason) from None
        try:
            return DockerHosts.has_gpus(client)
        finally:
            client.close()

    @staticmethod
    def has_gpus(client) -> bool:
        """Whether the engine can give a container GPUs (the NVIDIA Container Toolkit's runtime)."""
        return "nvidia" in (client.info().get("Runtimes") or {})

    def worst_case(self, plan, run) -> float:
        return plan.max_runtime_minutes / 60 * run.candidates[0].count

    def refusal(self, plan, worst: float, spent: float) -> str:
        already = f" plus {spent:.2f} already used" if spent else ""
        return (f"{self.config.source}: the worst case {worst:.2f} GPU-hours (each run to its safety net){already} is"
                f" over [docker] max_gpu_hours {self.limit:g}; nothing was started: raise it, drop cells, or lower"
                " max_runtime_minutes")

    # --- printing ----------------------------------------------------------------------------------------------------
    def print_plan(self, plan, store, note: str | None) -> None:
        from .dry_run import print_plan

        print_plan(plan, store, note)

    def print_sweep(self, plan, sweep_id: str, url: str, cells: list, spent: float, stores: dict,
                    note: str | None) -> None:
        from .dry_run import print_sweep

        print_sweep(plan, sweep_id, url, cells, self, spent, note)

    # --- running -----------------------------------------------------------------------------------------------------
    def runner(self, launch, run, adopt: Any = None):
        from .container import ContainerRun

        if adopt is not None:  # a container that already runs keeps its host: new ones wait for it
            host = launch.plan.settings.gpu(run.candidates[0].requested).host
            self._following[host] = self._following.get(host, 0) + 1
        return ContainerRun(launch, run, self, adopt=adopt)

    def stop_command(self, live: dict[str, str]) -> str:
        from .container import stop_command

        return stop_command(live) or super().stop_command(live)

    async def turn(self, host: str, following: bool, interrupted: asyncio.Event, view, run_id: str) -> _Turn | None:
        """Wait until the host runs no other gpubench container of this call; None when interrupted first."""
        if following:
            return _Turn(self, host, following=True)
        said = False
        while self._busy.get(host) or self._following.get(host):
            if not said:
                view.update(run_id, status="waiting: host busy", obtained=host)
                said = True
            try:
                await asyncio.wait_for(interrupted.wait(), timeout=0.5)
                return None
            except TimeoutError:
                pass
        if interrupted.is_set():
            return None
        self._busy[host] = True
        return _Turn(self, host, following=False)

    # --- what an earlier call left -----------------------------------------------------------------------------------
    async def left_behind(self, sweep_id: str, stored: set[str], cells: dict, pending: set[str]) -> Leftovers:
        from .manage import left_behind

        mine = {path: plan for path, plan in cells.items() if path in pending}
        return Leftovers(follow=await asyncio.to_thread(left_behind, self.config, sweep_id, stored, mine))

    # --- by run id ---------------------------------------------------------------------------------------------------
    async def status(self, run_id: str, results_dir: str) -> int | None:
        from .manage import status

        return await asyncio.to_thread(status, self.lookup, run_id, results_dir)

    async def logs(self, run_id: str, follow: bool, results_dir: str) -> int | None:
        from .manage import logs

        return await asyncio.to_thread(logs, self.lookup, run_id, follow, results_dir)

    async def cancel(self, run_id: str) -> int | None:
        from .manage import cancel

        return await cancel(self.lookup, run_id)

    def not_found(self, run_id: str) -> str:
        return f"no gpubench container for run id {run_id!r} on {', '.join(self.lookup)}"

    async def cleanup(self, all_hosts: bool, dry_run: bool) -> int:
        from .manage import cleanup

        return await cleanup(self.name, self.lookup, all_hosts, dry_run)
