"""`gpubench-launch <workload>`: check everything that can be checked before a machine is billed,
then run one job (or instance) per run of the plan in parallel, and print the summary."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from . import errors
from .errors import LaunchError
from .redact import Redactor
from .runcrate.client import api_errors, describe, make_client


@dataclass
class LaunchOptions:
    workload: str
    gpus: tuple[str, ...]
    each: bool = False
    via: str | None = None
    setups: str | tuple[str, ...] | None = None  # A,B as --setups takes it (repeatable)
    smoke: bool = False
    repeats: int | None = None
    store: str | None = None
    results_dir: str = "gpubench-results"
    max_cost: float | None = None
    max_minutes: float | None = None
    max_runtime_minutes: int | None = None
    image: str | None = None
    region: str | None = None
    capacity_wait: int | None = None
    deployment: str = "container"
    dry_run: bool = False
    verbose: bool = False
    job_command: str | None = None
    template: str | None = None
    study: str | None = None
    overrides: tuple[str, ...] = ()  # --set, passed through to the job's `gpubench run`
    weights: str | None = None  # --weights, passed through
    price: float | None = None  # --price: the hourly rate for cost metrics, instead of /instances/types'
    slurm: str | None = None  # --slurm CLUSTER.toml: batch jobs on that cluster instead (slurm/launch.py)
    slurm_python: str | None = None


def launch(options: LaunchOptions) -> int:
    return asyncio.run(_launch(options))


async def fetch_types(client, redact: Redactor) -> list:
    try:
        return await client.instances.list_types()
    except api_errors() as exc:
        raise LaunchError(f"cannot read /instances/types: {describe(exc, redact)}") from None


def instance_types() -> list:
    """The API's instance types (prices among them), read once with the key from the environment."""
    async def read():
        client = make_client()
        try:
            return await fetch_types(client, Redactor())
        finally:
            await client.close()

    return asyncio.run(read())


async def _launch(o: LaunchOptions) -> int:
    from gpubench.stores import StoreError, check_local_dir, parse_store

    from .pace import Pace
    from .plan import fitting, resolve_gpu, resolve_setups, resolve_workload, run_command

    redact = Redactor()
    spec = resolve_workload(o.workload)
    setups = resolve_setups(spec, o.setups)
    via = o.via or spec.via
    if not o.gpus:
        raise LaunchError("give at least one --gpu (see gpubench-launch gpus for the list)")
    try:
        pace = Pace.from_env()
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    try:
        store = parse_store(o.store)
        check_local_dir(o.results_dir)  # creates nothing: a dry run refuses what the real run would
    except StoreError as exc:
        raise LaunchError(str(exc)) from None
    command = run_command(spec, setups, o.smoke, o.repeats, o.overrides, o.weights)
    if not o.job_command:
        from .run_check import check_run_command

        check_run_command(command)  # the job's own checks, here, before any API request (in --dry-run too)
    if o.slurm:
        from .slurm.launch import launch_on_slurm

        return await launch_on_slurm(o, spec, setups, store, pace, redact)

    client = make_client()
    try:
        types = await fetch_types(client, redact)
        deployment = o.deployment if via == "instance" else None
        gpus = [await resolve_gpu(client, g, types, spec.gpu_count, deployment, o.region) for g in o.gpus]
        if not o.job_command:  # another command is not the workload's: its needs do not apply
            gpus = fitting(spec, gpus, setups, o.smoke)
        if via == "instance" and len({g.gpu_type for g in gpus}) < len(gpus) and o.each:
            raise LaunchError("the same GPU twice with --each")
        plan = build_plan(o, spec, setups, via, gpus, deployment, store)
        if o.dry_run:
            from .show import print_plan

            print_plan(plan)
            return errors.OK
        await check_store(store, plan.runs[0].run_id, redact)
        if via != "instance":
            return await run_plan(client, plan, pace, redact, store, o.verbose)
        # Instance calls are retried by the launcher itself, which counts the failures it meets.
        counted = make_client(max_retries=0)
        try:
            return await run_plan(counted, plan, pace, redact, store, o.verbose)
        finally:
            await counted.close()
    finally:
        await client.close()


async def check_store(store, run_id: str, redact: Redactor) -> None:
    """The store takes a real write before anything is launched (no store: nothing to check)."""
    from gpubench.stores import StoreError

    if store is None:
        return
    try:
        await asyncio.to_thread(store.check_writable, run_id)
    except StoreError as exc:
        raise LaunchError(redact(str(exc))) from None


def build_plan(o: LaunchOptions, spec, setups, via: str, gpus: list, deployment: str | None, store):
    """The plan of one launch (one run per GPU with --each, else one run): what `--dry-run` prints."""
    from .plan import LaunchPlan, new_runs, run_command, safety_net_minutes

    plan = LaunchPlan(
        workload=spec, setups=setups, smoke=o.smoke, repeats=o.repeats, via=via,
        image=o.image or spec.image,
        command=o.job_command or study_command(o, run_command(spec, setups, o.smoke, o.repeats, o.overrides,
                                                              o.weights)),
        max_runtime_minutes=safety_net_minutes(spec, o.max_minutes, o.max_runtime_minutes, o.smoke),
        runs=new_runs(spec, gpus, o.each), max_cost=o.max_cost, max_minutes=o.max_minutes,
        capacity_wait_minutes=o.capacity_wait, region=o.region, deployment=deployment,
        store_url=store.url if store else None, results_dir=o.results_dir, study=o.study, template=o.template,
        price_override=o.price,
    )
    for run in plan.runs:
        run.env = plan.env_for(run)
    return plan


def study_command(o: LaunchOptions, command: str) -> str:
    """first-matmul on a stock template installs what it needs first (a --template is a prepared one)."""
    if o.study != "first-matmul" or o.template:
        return command
    from .runcrate.bootstrap import with_bootstrap

    return with_bootstrap(command)


async def run_plan(client, plan, pace, redact, store, verbose: bool) -> int:
    from .progress import ProgressView

    view = ProgressView(verbose=verbose)
    outcomes = await run_launches(client, [(plan, store)], pace, redact, view)
    launched = [o for o in outcomes if o.launched]
    if not launched and all(o.exit_code == errors.BAD_INPUT for o in outcomes):
        raise LaunchError(outcomes[0].message)
    for o in outcomes:  # one refused while others ran: that run has no result (3), and the others did run
        if not o.launched and o.exit_code == errors.BAD_INPUT:
            o.exit_code = errors.JOB_NOT_SUCCEEDED
    view.summary(outcomes)
    return errors.combine([o.exit_code for o in outcomes])


async def run_launches(client, plans: list, pace, redact, view, adopt: dict | None = None, cap=None) -> list:
    """Every run of the given (plan, store) pairs at once, in one view, under the one request budget and one
    Ctrl-C: a launch's runs, or a sweep's cells. `adopt` maps a run id to its job already submitted (a resumed
    sweep follows it instead of submitting again); `cap` is a dollar cap shared by all the jobs."""
    from .context import InterruptHandler, Launch

    interrupted, live = asyncio.Event(), {}
    runners, plan_of = [], {}
    for plan, store in plans:
        launch = Launch(client=client, plan=plan, pace=pace, view=view, redact=redact, store=store,
                        interrupted=interrupted, live=live, cap=cap)
        if plan.via == "instance":
            from .runcrate.instance import InstanceRun

            runners += [InstanceRun(launch, run, study=plan.study == "first-matmul") for run in plan.runs]
        elif plan.via == "slurm":
            from .slurm.job import SlurmRun

            runners += [SlurmRun(launch, run, adopt=(adopt or {}).get(run.run_id)) for run in plan.runs]
        else:
            from .runcrate.jobs import JobRun

            runners += [JobRun(launch, run, adopt=(adopt or {}).get(run.run_id)) for run in plan.runs]
        for run in plan.runs:
            view.add(run.run_id, run.label)
            plan_of[run.run_id] = (plan, run)

    def pricing(o):
        if o.run_id not in plan_of:
            return None
        plan, run = plan_of[o.run_id]
        return plan.pricing(run, o.gpu, o.region)

    view.pricing = pricing
    from .runcrate.budget import process_budget

    budget = process_budget()
    budget.listeners[:] = [view.pacing]
    view.pacing_now = budget.holding_back
    with InterruptHandler(launch):
        view.start()
        try:
            results = await asyncio.gather(*(r.execute() for r in runners), return_exceptions=True)
        finally:
            view.stop()
    outcomes = []
    for runner, result in zip(runners, results, strict=True):
        if isinstance(result, BaseException):
            if isinstance(result, KeyboardInterrupt | SystemExit):
                raise result
            from .results import RunOutcome

            result = RunOutcome(runner.run_id, errors.LAUNCHER_TROUBLE, "launcher error",
                                message=redact(f"{type(result).__name__}: {result}"))
        outcomes.append(result)
    return outcomes
