"""Runcrate as a provider (provider.Provider): rented GPUs billed by the hour, as container jobs (`jobs.py`) or
container instances over SSH (`instance.py`). GPU names and prices come from GET /instances/types (`types.py`); a
sweep's cap is dollars; what a killed launcher left is found by the jobs' tags."""

from __future__ import annotations

import os
from typing import Any

from ..errors import LaunchError
from ..provider import USD, Left, Leftovers, Provider
from ..redact import Redactor


def need_sdk(ssh: bool = False) -> None:
    """The Runcrate SDK (and asyncssh for instances) come with the `launch` extra: one line when they are missing."""
    from gpubench.extras import MissingExtra, require

    try:
        require("launch", "gpubench-launch", ("runcrate", "asyncssh") if ssh else ("runcrate",))
    except MissingExtra as exc:
        raise LaunchError(str(exc)) from None


class Runcrate(Provider):
    name = "runcrate"
    title = "Runcrate"
    reached_by = "RUNCRATE_API_KEY"
    cap_unit = USD

    def __init__(self, *, via: str | None = None, deployment: str | None = "container", region: str | None = None,
                 sweep: bool = False, offline: bool = False, limit: float | None = None):
        self.via = via  # --via (job | instance); None: the workload's own (the catalog's `via`)
        self.deployment = deployment  # the instance path's deployment type
        self.region = region
        self.sweep = sweep  # a sweep's instance cells time their launch (first-matmul's study)
        self.offline = offline  # a sweep's dry run without a key: the plan is checked, not its GPU names or prices
        self.limit = limit
        self.redact = Redactor()
        self.client = None
        self._counted = None  # the instance path's own client: its calls are retried and counted by the launcher
        self.types: list | None = None

    # --- choosing it -----------------------------------------------------------------------------------------------
    @classmethod
    def from_launch(cls, options) -> Runcrate:
        need_sdk(ssh=options.via == "instance")
        return cls(via=options.via, deployment=options.deployment, region=options.region)

    @classmethod
    def from_plan(cls, table: Any, plan, options) -> Runcrate:
        offline = options.dry_run and not os.environ.get("RUNCRATE_API_KEY")
        if not offline:
            need_sdk()
        return cls(sweep=True, offline=offline, limit=plan.max_usd)

    @classmethod
    def for_run(cls, evidence: dict[str, Any]) -> Runcrate | None:
        """Runs are looked up through the API: with a key, or for a run this host says was Runcrate's (then the
        missing key is the answer)."""
        named = evidence.get("provider") == cls.name
        if not named and not os.environ.get("RUNCRATE_API_KEY"):
            return None
        try:
            need_sdk()
        except LaunchError:
            if named:
                raise
            return None  # a key set, but no SDK here: not a machine that launches on Runcrate
        return cls()

    async def open(self, dry_run: bool = False) -> None:
        if self.offline:
            return
        from .client import make_client
        from .types import fetch_types

        self.client = make_client()
        self.types = await fetch_types(self.client, self.redact)

    async def close(self) -> None:
        for client in (self._counted, self.client):
            if client is not None:
                await client.close()

    # --- what a run needs against what it offers -------------------------------------------------------------------
    def _via(self, spec) -> str:
        return self.via or spec.via

    async def offer(self, gpu: str, spec):
        from ..plan import GpuChoice
        from .types import resolve_gpu

        if self.offline:  # no key: the name as written, unpriced
            return GpuChoice(requested=gpu, gpu_type=gpu, count=spec.gpu_count, rows=())
        deployment = self.deployment if self._via(spec) == "instance" else None
        return await resolve_gpu(self.client, gpu, self.types, spec.gpu_count, deployment, self.region)

    def shape(self, plan, options) -> None:
        plan.provider = self.name
        plan.via = self._via(plan.workload)
        plan.deployment = self.deployment if plan.via == "instance" else None
        if plan.via == "instance" and self.sweep:
            plan.study = plan.workload.name  # a sweep's instance cell times its launch, as `first-matmul` does
        if plan.study == "first-matmul" and not plan.template and not options.job_command:
            from .bootstrap import with_bootstrap  # a stock template: install what the study needs first

            plan.command = with_bootstrap(plan.command)

    def worst_case(self, plan, run) -> float | None:
        return plan.worst_cost(run)

    def refusal(self, plan, worst: float, spent: float) -> str:
        already = f" plus ${spent:.2f} already spent" if spent else ""
        return (f"plan {plan.source}: the worst case ${worst:.2f} (each cell's safety net at its dearest region)"
                f"{already} is over max_usd ${self.limit:g}; nothing was launched: raise max_usd, drop cells, or lower"
                " max_runtime_minutes")

    def running_cap(self, plan, spent: float):
        from ..context import SharedCap

        return SharedCap(plan.max_usd - spent)

    # --- printing ----------------------------------------------------------------------------------------------------
    def print_plan(self, plan, store, note: str | None) -> None:
        from .dry_run import print_plan

        print_plan(plan)

    def print_sweep(self, plan, sweep_id: str, url: str, cells: list, spent: float, stores: dict,
                    note: str | None) -> None:
        from .dry_run import print_matrix

        print_matrix(plan, sweep_id, url, cells, spent, self.offline)

    def print_offers(self, deployment: str | None) -> None:
        """`gpubench-launch gpus`: the GPU types on offer, with their prices."""
        from .types import instance_types, print_types

        print_types(instance_types(), deployment)

    # --- running -----------------------------------------------------------------------------------------------------
    def runner(self, launch, run, adopt: Any = None):
        if launch.plan.via == "instance":
            from .instance import InstanceRun

            return InstanceRun(launch, run, self._instance_client(), study=launch.plan.study == "first-matmul")
        from .jobs import JobRun

        return JobRun(launch, run, self.client, adopt=adopt)

    def _instance_client(self):
        """A launch's instances retry their own calls (and count the failures); a sweep's share its client."""
        if self.sweep:
            return self.client
        if self._counted is None:
            from .client import make_client

            self._counted = make_client(max_retries=0)
        return self._counted

    def watch(self, view) -> None:
        from .budget import process_budget

        budget = process_budget()  # one request budget for every job of this process: the view shows its pacing
        budget.listeners[:] = [view.pacing]
        view.pacing_now = budget.holding_back

    # --- what an earlier call left -----------------------------------------------------------------------------------
    async def left_behind(self, sweep_id: str, stored: set[str], cells: dict, pending: set[str]) -> Leftovers:
        """The sweep's jobs (tag gpubench_sweep) whose runs are not stored; per pending cell the newest one still
        live or succeeded. One that failed or was cancelled (say by `gpubench-launch cleanup`) is run again."""
        from .client import api_errors, describe

        found: dict[str, list] = {}
        try:
            async for job in self.client.jobs.list_all(tags={"gpubench_sweep": sweep_id}):
                run_id = job.tags.get("gpubench_run_id")
                if job.tags.get("gpubench_sweep") == sweep_id and run_id and run_id not in stored:
                    found.setdefault(job.tags.get("gpubench_cell", ""), []).append(job)
        except api_errors() as exc:
            raise LaunchError(f"cannot list the sweep's jobs: {describe(exc, self.redact)}") from None
        left = {}
        for path in pending:
            jobs = sorted((j for j in found.get(path, []) if not j.finished or j.status == "succeeded"),
                          key=lambda j: str(j.created_at))
            if jobs:
                job = jobs[-1]
                left[path] = Left(job.tags["gpubench_run_id"], job, f"job {job.id} ({job.status}) from an earlier call")
        return Leftovers(follow=left)

    # --- by run id ---------------------------------------------------------------------------------------------------
    async def status(self, run_id: str, results_dir: str) -> int | None:
        from .manage import status

        return await status(run_id, results_dir)

    async def logs(self, run_id: str, follow: bool, results_dir: str) -> int | None:
        from .manage import logs

        return await logs(run_id, follow, results_dir)

    async def cancel(self, run_id: str) -> int | None:
        from .manage import cancel

        return await cancel(run_id)

    def not_found(self, run_id: str) -> str:
        from .manage import NOT_FOUND

        return NOT_FOUND.format(run_id=run_id)

    async def cleanup(self, all_hosts: bool, dry_run: bool) -> int:
        from .cleanup import cleanup

        return await cleanup(self.name, all_hosts, dry_run)
