"""What a place runs go must do: the one interface of Runcrate (`runcrate/`), Slurm (`slurm/`) and owned Docker hosts
(`docker_hosts/`). A fourth provider is a folder beside them holding a subclass of `Provider`, its CLI options
(`options.py`) and one line in `providers.py`; the core (launch.py, sweep/, cli.py) calls nothing else of it.

A launch or a sweep asks, in this order:
1. what a run needs against what the provider offers: `offer()` turns each GPU name into a `plan.GpuChoice` (its
   spelling there, its count, and its price rows where the provider sells GPUs: data read from the provider, never
   written in code); the core holds each choice to what the study needs (`gpubench/gpu_fit.py`) and refuses the same
   GPU twice; `shape()` makes the plan the provider's (runs, time limit, its settings); `check()` asks the place
   whether it can take the plans, before anything is submitted;
2. the cap: `cap_unit` says what a sweep's cap counts (dollars billed, or GPU-hours of owned machines),
   `worst_case()` the most one run can use, `over_cap()` the refusal when the worst case does not fit;
3. submit, follow the record stream, cancel and confirm, the run's facts: `runner()` gives one run's `Runner`, whose
   `execute()` does all four (below). `submit_together()` lets a provider submit several runs in one call (a
   sweep's cells as one job array); by default each runner submits its own;
4. what an earlier call left: `left_behind()` finds a sweep's jobs from their tags, labels, comments or side
   folders, and picks the one each pending cell follows instead of paying again; a job that ended while no launcher
   followed it is recorded by `record_ended()` (its job.json), and what it used counts under the cap;
5. by run id, after the fact: `status()`, `logs()`, `cancel()` and `cleanup()`, for `gpubench-launch status RUN` and
   the others. `for_run()` builds the provider that can look a run up here (None when it cannot: no key, no
   controller, no engine). `stop_command()` is what a launcher that quits at once (a second Ctrl-C) tells a person
   to run: `scancel ID...`, `docker -H HOST rm -f ID...`, `gpubench-launch cleanup`.

Every job.json a runner writes carries FACTS (None where the provider cannot know one), so the sweep's store, the
summaries and `status` read any provider's runs alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .errors import LaunchError

if TYPE_CHECKING:
    from .context import Launch, SharedCap
    from .plan import GpuChoice, LaunchPlan, RunPlan
    from .results import RunOutcome

# The facts every provider's job.json holds: which provider ran it, its job (job id, batch job id, container id),
# how it ended (the provider's own status word, the job's exit code, its one-line error), whether it ever got a
# machine (started_at: when, as the provider says it; None when it never started), and what it used: dollars
# billed, GPU-hours held (None where the provider counts the other).
FACTS = ("provider", "run_id", "job_id", "status", "exit_code", "error", "started_at", "cost_usd", "gpu_hours")

USD, GPU_HOURS = "usd", "gpu_hours"  # what a sweep's cap counts


class Runner(Protocol):
    """One run on one provider, from submit to stored folder."""

    run_id: str

    async def execute(self) -> RunOutcome:
        """Submit the run (or follow the job given as `adopt`: one an earlier call left, or one `submit_together`
        submitted), feed each line of its output to a `results.RunFolder` (the record stream: results.jsonl, run.log,
        stdout, the live view), and show its state in the view. When `launch.interrupted` is set, cancel it and
        confirm it stopped. At the end write job.json (FACTS and the provider's own), store the folder, and return
        the outcome. On any way out, a job this call submitted is cancelled first: nothing is left running that no
        launcher follows, except by a kill -9 (then `cleanup` and the sweep's resume find it)."""
        ...


@dataclass
class Left:
    """A job an earlier call left for a sweep's cell, chosen to be followed instead of submitted again."""

    run_id: str  # the run it is (its folder's name)
    job: Any  # what the provider's runner takes as `adopt`
    note: str  # what the sweep says about it: "job 12 (running) from an earlier call"


@dataclass
class Ended:
    """A job an earlier call left that ended while no launcher followed it (its run has no job.json in the store):
    not followed, but recorded (`Provider.record_ended`), and what it used counts under the sweep's cap."""

    cell: str  # its cell's path
    run_id: str
    job: Any  # the provider's own, for record_ended
    used: float  # in the provider's cap_unit


@dataclass
class Leftovers:
    """What `left_behind` found of a sweep's earlier calls."""

    follow: dict[str, Left] = field(default_factory=dict)  # a pending cell's path -> the job it follows
    ended: list[Ended] = field(default_factory=list)


class Provider:
    """One place runs go. Subclasses set the class data and implement the methods that raise NotImplementedError."""

    name: ClassVar[str]  # the registry's name (providers.py): recorded in config.json, job.json and the state files
    title: ClassVar[str]  # for a person: "Runcrate", "Slurm", "Docker hosts"
    cap_unit: ClassVar[str] = USD  # USD: it bills (a sweep's max_usd); GPU_HOURS: owned machines (max_gpu_hours)
    gpu_optional: ClassVar[bool] = False  # a launch may leave --gpu out (a Docker host runs on the GPUs it has)
    limit: float | None = None  # the cap this call runs under, in cap_unit (a sweep's max_usd, [slurm] max_gpu_hours)
    reached_by: ClassVar[str] = ""  # what lets for_run() look runs up from here, said when nothing can

    # --- choosing it -----------------------------------------------------------------------------------------------
    @classmethod
    def from_launch(cls, options) -> Provider:
        """For `gpubench-launch WORKLOAD ...`: built from the launch options (its own are in `options.provider`);
        a LaunchError (one line, exit 2) for a bad one, before any request."""
        raise NotImplementedError

    @classmethod
    def from_plan(cls, table: Any, plan, options) -> Provider:
        """For `gpubench-launch sweep PLAN`: built from the plan's table named after it (None for the default
        provider, whose plans have none), the plan and the sweep's options."""
        raise NotImplementedError

    @classmethod
    def for_run(cls, evidence: dict[str, Any]) -> Provider | None:
        """For status/logs/cancel/cleanup: the provider that can look runs up from here, given what this host knows
        of the run (its state file, job.json or config.json; {} when nothing); None when it cannot here."""
        return None

    async def open(self, dry_run: bool = False) -> None:
        """Connect (an API client, an engine) once the plan is checked; a dry run may stay offline."""

    async def close(self) -> None:
        """Let go of what open() took."""

    # --- what a run needs against what it offers ---------------------------------------------------------------------
    async def offer(self, gpu: str, spec) -> GpuChoice:
        """One GPU name as given (NAME[:N]) as this provider offers it for the workload `spec` (a catalog
        WorkloadSpec), or a LaunchError listing the valid names."""
        raise NotImplementedError

    def default_gpus(self, spec, smoke: bool) -> list[str]:
        """The GPU names a launch without --gpu runs on (gpu_optional providers only)."""
        return []

    def shape(self, plan: LaunchPlan, options) -> None:
        """Make a plan the core built (launch.build_plan, from the launch's options) this provider's: its name, its
        runs, time limit and settings. The core sets each run's env after."""

    async def check(self, plans: list[LaunchPlan], dry_run: bool) -> str | None:
        """Before anything is submitted: the place answers and has what the plans ask for (LaunchError if not). A dry
        run that cannot ask (the tools are not installed here) gets a note to print instead."""
        return None

    def worst_case(self, plan: LaunchPlan, run: RunPlan) -> float | None:
        """The most one run can use, in cap_unit: its safety net (max runtime, --time) at its dearest rate."""
        raise NotImplementedError

    def over_cap(self, plan, worst: float, spent: float) -> str | None:
        """The one line refusing a call whose worst case, with what its sweep already used, is over `limit` (plan:
        the sweep's plan, or a launch's LaunchPlan); None when it fits."""
        if self.limit is None or spent + worst <= self.limit + 1e-9:
            return None
        return self.refusal(plan, worst, spent)

    def refusal(self, plan, worst: float, spent: float) -> str:
        """The line over_cap refuses with: the worst case and what was used, against `limit`, in this provider's
        words (cap_unit, where the cap is set, what a user can change)."""
        raise NotImplementedError

    def running_cap(self, plan, spent: float) -> SharedCap | None:
        """A cap the running jobs are stopped at (dollars read live); None where nothing is billed."""
        return None

    # --- printing a plan (--dry-run) ---------------------------------------------------------------------------------
    def print_plan(self, plan: LaunchPlan, store, note: str | None) -> None:
        raise NotImplementedError

    def print_sweep(self, plan, sweep_id: str, url: str, cells: list, spent: float, stores: dict,
                    note: str | None) -> None:
        raise NotImplementedError

    def print_offers(self, deployment: str | None) -> None:
        """`gpubench-launch gpus`: the GPU types on offer (the default provider's)."""
        raise LaunchError(f"{self.title} has no list of GPU types to show")

    # --- running -----------------------------------------------------------------------------------------------------
    def runner(self, launch: Launch, run: RunPlan, adopt: Any = None) -> Runner:
        raise NotImplementedError

    async def submit_together(self, launches: list[tuple[Launch, RunPlan]]) -> dict[str, Any]:
        """Submit several runs in one call (a sweep's cells as one job array): {run id: the job, as runner() takes it
        in `adopt`}. Runs left out submit their own; the default leaves out every one. Called under the call's
        Ctrl-C handler: a run it could not submit (interrupted first, refused) is handed over all the same, and its
        runner says so; if it fails part-way, what it submitted is cancelled before the error goes on."""
        return {}

    def stop_command(self, live: dict[str, str]) -> str:
        """What stops the jobs of `live` (run id -> what Runner.execute put there) when the launcher quits without
        confirming (a second Ctrl-C): the command a person runs next."""
        return "gpubench-launch cleanup"

    def watch(self, view) -> None:
        """Connect the live view to what the provider paces (Runcrate's request budget); nothing by default."""

    # --- what an earlier call left -----------------------------------------------------------------------------------
    async def left_behind(self, sweep_id: str, stored: set[str], cells: dict[str, LaunchPlan],
                          pending: set[str]) -> Leftovers:
        """The sweep's jobs an earlier call left (found by their tags, labels, comments or side folders) whose runs
        are not in `stored` (no job.json). `follow`: per pending cell the one to follow, a live one (or, where the
        provider can read its output again, one that succeeded); one that failed or was cancelled is submitted
        again. `ended`: the jobs that ended while no launcher followed them, to be recorded (providers that write
        nothing of their own leave it empty). `cells` maps every cell's path to its plan; `pending` are the paths
        of the cells without a result."""
        return Leftovers()

    async def record_ended(self, ended: Ended, plan: LaunchPlan, store, redact) -> str:
        """Write what an Ended job came to into its run folder (job.json: FACTS) and store the folder; the line the
        sweep says of it ("slurm job 12_1 from an earlier call completed")."""
        raise NotImplementedError

    # --- by run id ---------------------------------------------------------------------------------------------------
    async def status(self, run_id: str, results_dir: str) -> int | None:
        """Print where the run stands; None when this provider does not know it."""
        raise NotImplementedError

    async def logs(self, run_id: str, follow: bool, results_dir: str) -> int | None:
        """Print the run's output (to its end with follow); None when this provider does not know it."""
        raise NotImplementedError

    async def cancel(self, run_id: str) -> int | None:
        """Cancel the run's job and confirm it stopped; None when this provider does not know it."""
        raise NotImplementedError

    def not_found(self, run_id: str) -> str:
        """What it says of a run id it does not know."""
        return f"no {self.title} job for run id {run_id!r}"

    async def cleanup(self, all_hosts: bool, dry_run: bool) -> int:
        """Stop what gpubench left running here with no launcher following it (say what, with --dry-run)."""
        raise NotImplementedError


def not_here(provider: type[Provider], why: str) -> LaunchError:
    """A provider that cannot be used here, in one line."""
    return LaunchError(f"{provider.title}: {why}")
