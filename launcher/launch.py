"""`gpubench-launch <workload>`: check everything that can be checked before a machine is taken, then run one job
per run of the plan in parallel on the provider the options name (providers.py), and print the summary. The same
run_launches runs a sweep's cells."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .errors import LaunchError
from .redact import Redactor


@dataclass
class LaunchOptions:
    workload: str
    gpus: tuple[str, ...] = ()
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
    provider_options: dict[str, Any] = field(default_factory=dict)  # the providers' own (--slurm, --docker-host, ...)


def launch(options: LaunchOptions) -> int:
    from . import providers

    provider = providers.for_launch(options)  # before anything else: a missing SDK or a bad option is one line
    return asyncio.run(_launch(options, provider))


async def _launch(o: LaunchOptions, provider) -> int:
    from gpubench.stores import StoreError, check_local_dir, parse_store

    from .pace import Pace
    from .plan import fitting, refuse_twice, resolve_setups, resolve_workload, run_command

    redact = Redactor()
    spec = resolve_workload(o.workload)
    setups = resolve_setups(spec, o.setups)
    if not o.gpus and not provider.gpu_optional:
        raise LaunchError("Missing option '--gpu': name a GPU type (gpubench-launch gpus lists Runcrate's)")
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

        check_run_command(command)  # the job's own checks, here, before any request (in --dry-run too)
    try:
        await provider.open(o.dry_run)
        gpus = [await provider.offer(g, spec) for g in o.gpus or provider.default_gpus(spec, o.smoke)]
        refuse_twice(gpus)
        if not o.job_command:  # another command is not the workload's: its needs do not apply
            gpus = fitting(spec, gpus, setups, o.smoke)
        plan = build_plan(o, spec, setups, provider, gpus, store)
        note = await provider.check([plan], o.dry_run)
        over = provider.over_cap(plan, sum(provider.worst_case(plan, run) or 0.0 for run in plan.runs), 0.0)
        if o.dry_run:
            provider.print_plan(plan, store, note)
            if over:
                raise LaunchError(over)
            return errors.OK
        if over:  # before anything is submitted
            raise LaunchError(over)
        await check_store(store, plan.runs[0].run_id, redact)
        return await run_plan(provider, plan, pace, redact, store, o.verbose)
    finally:
        await provider.close()


async def check_store(store, run_id: str, redact: Redactor) -> None:
    """The store takes a real write before anything is launched (no store: nothing to check)."""
    from gpubench.stores import StoreError

    if store is None:
        return
    try:
        await asyncio.to_thread(store.check_writable, run_id)
    except StoreError as exc:
        raise LaunchError(redact(str(exc))) from None


def build_plan(o: LaunchOptions, spec, setups, provider, gpus: list, store):
    """The plan of one launch (one run per GPU with --each, else one run), made the provider's: what `--dry-run`
    prints."""
    from .plan import LaunchPlan, new_runs, run_command, safety_net_minutes

    plan = LaunchPlan(
        workload=spec, setups=setups, smoke=o.smoke, repeats=o.repeats, via=None,
        image=o.image or spec.image,
        command=o.job_command or run_command(spec, setups, o.smoke, o.repeats, o.overrides, o.weights),
        max_runtime_minutes=safety_net_minutes(spec, o.max_minutes, o.max_runtime_minutes, o.smoke),
        runs=new_runs(spec, gpus, o.each), max_cost=o.max_cost, max_minutes=o.max_minutes,
        capacity_wait_minutes=o.capacity_wait, region=o.region,
        store_url=store.url if store else None, results_dir=o.results_dir, study=o.study, template=o.template,
        price_override=o.price,
    )
    provider.shape(plan, o)
    for run in plan.runs:
        run.env = plan.env_for(run)
    return plan


async def run_plan(provider, plan, pace, redact, store, verbose: bool) -> int:
    from .progress import ProgressView

    view = ProgressView(verbose=verbose)
    outcomes = refusals(await run_launches(provider, [(plan, store)], pace, redact, view))
    view.summary(outcomes)
    return errors.combine([o.exit_code for o in outcomes])


def refusals(outcomes: list) -> list:
    """Runs the place refused (sbatch's answer, a host's): all of them is bad input, one line and exit 2 (nothing
    ran); one among runs that ran has no result, exit 3, as any run that did not succeed."""
    if outcomes and not any(o.launched for o in outcomes) and all(o.exit_code == errors.BAD_INPUT for o in outcomes):
        raise LaunchError(outcomes[0].message)
    for o in outcomes:
        if not o.launched and o.exit_code == errors.BAD_INPUT:
            o.exit_code = errors.JOB_NOT_SUCCEEDED
    return outcomes


async def run_launches(provider, plans: list, pace, redact, view, adopt: dict | None = None, cap=None) -> list:
    """Every run of the given (plan, store) pairs at once, on one provider, in one view, under one Ctrl-C: a launch's
    runs, or a sweep's cells. `adopt` maps a run id to its job already submitted (a resumed sweep follows it instead
    of submitting again); `cap` is a dollar cap shared by all the jobs."""
    from .context import InterruptHandler, Launch

    adopt = dict(adopt or {})
    interrupted, live = asyncio.Event(), {}
    launches, plan_of = [], {}
    for plan, store in plans:
        launches.append(Launch(provider=provider, plan=plan, pace=pace, view=view, redact=redact, store=store,
                               interrupted=interrupted, live=live, cap=cap))
        for run in plan.runs:
            view.add(run.run_id, run.label)
            plan_of[run.run_id] = (plan, run)

    def pricing(o):
        if o.run_id not in plan_of:
            return None
        plan, run = plan_of[o.run_id]
        return plan.pricing(run, o.gpu, o.region)

    view.pricing = pricing
    provider.watch(view)
    with InterruptHandler(launches[0]):
        view.start()
        try:
            fresh = [(launch, run) for launch in launches for run in launch.plan.runs if run.run_id not in adopt]
            adopt.update(await provider.submit_together(fresh) if fresh else {})
            runners = [provider.runner(launch, run, adopt.get(run.run_id))
                       for launch in launches for run in launch.plan.runs]
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
