"""gpubench-launch: run a catalog benchmark on Runcrate GPUs, a Slurm cluster or your own Docker hosts, stream its
results, store them.

    gpubench-launch train-compile --gpu L40S                 one job, results in ./gpubench-results/<run-id>/
    gpubench-launch whisper --gpu RTX5090 --gpu L40S         one job, L40S if no RTX5090 is free
    gpubench-launch sdxl --gpu L40S --gpu H100 --each        one job per GPU type, in parallel
    gpubench-launch embed --gpu L40S --dry-run               the plan, prices and expected cost only
    gpubench-launch first-matmul --gpu L40S --gpu RTX5090    launch-to-first-matmul study (instances)
    gpubench-launch sweep PLAN.toml --store s3://b/p         every cell of a plan, resumable, under its max_usd
    gpubench-launch embed --slurm cluster.toml --gpu H100    a batch job on your cluster
    gpubench-launch embed --docker-host ssh://me@box --smoke the pinned image on your own machine
    gpubench-launch status|logs|cancel RUN_ID;  gpubench-launch cleanup      any provider's runs

Records go to stdout as JSON Lines when stdout is not a terminal (a live table shows them on one);
human text goes to stderr. Errors are one line on stderr with exit code 2; the exit codes are gpubench's own
(gpubench/exit_codes.py: 0 every setup ok or skipped for a stated reason, 1 a setup failed or none ran,
3 job failed, 4 limit reached, 5 results kept locally only, 130 interrupted). This module imports only click:
the SDK, rich and asyncssh load when a command runs. `gpubench run`'s own arguments (--setups, --smoke, --repeats,
--set, --weights, --price, --results-dir) are declared once, in gpubench/run_args.py.
"""

from __future__ import annotations

import sys

import click

from gpubench import run_args
from gpubench.exit_codes import epilog
from gpubench.params import POSITIVE_MINUTES, POSITIVE_USD

from . import providers

EPILOG = epilog()


class LaunchGroup(click.Group):
    """`gpubench-launch WORKLOAD ...` is `gpubench-launch run WORKLOAD ...`."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "run", self.commands["run"], args
        return super().resolve_command(ctx, args)


def _options(options: list):
    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def launch_options(study: bool = False):
    def decorate(f):
        options = [
            click.option("--gpu", "gpus", multiple=True, required=study, metavar="NAME[:N]",
                         help="GPU type from /instances/types; repeat for fallbacks in order (or one run each "
                              "with --each). On a cluster or Docker host: the GPU name its table maps."),
            run_args.option("smoke"),
            click.option("--store", metavar="s3://BUCKET/PREFIX",
                         help="Also upload each run folder here (checked writable before launching)."),
            run_args.option("results_dir"),
            click.option("--max-cost", type=POSITIVE_USD, metavar="USD",
                         help="Cancel a run when its cost reaches this."),
            click.option("--max-minutes", type=POSITIVE_MINUTES, metavar="MIN",
                         help="Cancel a run this long after it was submitted."),
            click.option("--max-runtime-minutes", type=click.IntRange(1, 10080),
                         help="The API's own safety net per attempt (default: from the workload)."),
            click.option("--region", help="Only run in this region (id or prefix)."),
            click.option("--dry-run", is_flag=True, help="Print the plan, prices and expected cost; launch nothing."),
            click.option("-v", "--verbose", is_flag=True, help="Also print the job's non-record output."),
            click.option("--json", "as_json", is_flag=True,
                         help="JSON Lines records on stdout even on a terminal (the default for pipes and files)."),
            click.option("--template", help="A Runcrate template to boot; on the instance path it must provide "
                                            "`gpubench` (jobs get it from the workload's image). first-matmul "
                                            "without it installs uv, torch and gpubench on a stock one first."),
            click.option("--job-command", hidden=True,
                         help="Replace the job's command (for testing the launcher itself)."),
        ]
        if study:
            options.append(click.option("--deployment", type=click.Choice(["container", "vm"]), default="container",
                                        show_default=True, help="Instance deployment type to time."))
        else:
            options += [
                click.option("--each", is_flag=True, help="One run per --gpu, in parallel."),
                click.option("--via", type=click.Choice(["job", "instance"]),
                             help="Runcrate jobs (default) or container instances over SSH."),
                run_args.option("setups"),
                run_args.option("repeats"),
                click.option("--image", help="Container image (default: the workload's pinned image)."),
                click.option("--capacity-wait", type=click.IntRange(0, 1440), metavar="MIN",
                             help="How long a job may wait for a free GPU."),
                run_args.option("overrides"),
                run_args.option("weights"),
                run_args.option("price", help="Hourly price for the cost metrics and estimates, instead of the rate"
                                              " of the instance type (as `gpubench run --price`)."),
                *providers.launch_options(),  # where else runs go: --slurm FILE, --docker-host URL, ...
            ]
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


@click.group(cls=LaunchGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpubench", prog_name="gpubench-launch")
def cli():
    """Run gpubench benchmarks on Runcrate GPUs (RUNCRATE_API_KEY; RUNCRATE_BASE_URL for another API origin), on a
    Slurm cluster (--slurm) or on your own machines through Docker (--docker-host).

    Records stream to stdout as JSON Lines (when it is not a terminal) and to
    ./gpubench-results/<run-id>/; progress and the summary go to stderr.
    """


@cli.command("run", epilog=EPILOG)
@click.argument("workload")
@launch_options()
def run_cmd(workload, **opts):
    """Run WORKLOAD (a catalog name): `gpubench-launch WORKLOAD --gpu L40S` (Runcrate), or where an option says."""
    _records_on_terminal(opts.pop("as_json"))
    from .launch import LaunchOptions, launch

    given = {name: opts.pop(name) for name in providers.option_names()}
    return launch(LaunchOptions(workload=workload, provider_options=given,
                                **{**opts, "results_dir": _results_dir(opts["results_dir"])}))


@cli.command("first-matmul", epilog=EPILOG)
@launch_options(study=True)
def first_matmul_cmd(**opts):
    """Time launch -> API running -> first SSH -> first CUDA matmul, one instance per --gpu, in parallel."""
    _records_on_terminal(opts.pop("as_json"))
    from .launch import LaunchOptions, launch

    opts["results_dir"] = _results_dir(opts["results_dir"])
    return launch(LaunchOptions(workload="first-matmul", each=True, via="instance", study="first-matmul", **opts))


@cli.command("sweep", epilog=EPILOG)
@click.argument("plan", metavar="PLAN.toml")
@click.option("--store", metavar="s3://BUCKET/PREFIX",
              help="Results under PREFIX/<sweep-id>/ (read back to resume; default: the local results folder).")
@run_args.option("results_dir")
@click.option("--dry-run", is_flag=True,
              help="Print the matrix, each cell's expected and worst-case cost; launch nothing.")
@click.option("--retry-unavailable", is_flag=True, help="Try again the cells whose GPU type had no capacity.")
@click.option("--sweep-id", help="Name the sweep (default: the plan's name and a hash of its cells).")
@click.option("-v", "--verbose", is_flag=True, help="Also print the jobs' non-record output.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines records on stdout even on a terminal.")
@_options(providers.sweep_options())
def sweep_cmd(plan, as_json, **opts):
    """Run a plan: each workload (with its `gpubench run` arguments) on each GPU type, as parallel jobs
    under the plan's max_usd (or, with a [slurm] or [docker] table, on that cluster or those hosts).
    The same call again resumes: only cells without complete results run."""
    _records_on_terminal(as_json)
    from .sweep.run import SweepOptions, sweep

    given = {name: opts.pop(name) for name in providers.option_names(sweep=True)}
    return sweep(SweepOptions(plan=plan, provider_options=given,
                              **{**opts, "results_dir": _results_dir(opts["results_dir"])}))


@cli.command("gpus")
@click.option("--deployment", type=click.Choice(["container", "vm"]), help="Only this deployment type.")
def gpus_cmd(deployment):
    """List the GPU types on offer, with prices (Runcrate's GET /instances/types)."""
    from .manage import default_provider

    default_provider().print_offers(deployment)
    return 0


@cli.command("status")
@click.argument("run_id")
@run_args.option("results_dir")
def status_cmd(run_id, results_dir):
    """Where a run's job stands (a Runcrate job or instance, a Slurm job, a container on a Docker host)."""
    from .manage import status

    return status(run_id, _results_dir(results_dir))


@cli.command("logs")
@click.argument("run_id")
@click.option("-f", "--follow", is_flag=True, help="Keep printing until the job ends.")
@run_args.option("results_dir")
def logs_cmd(run_id, follow, results_dir):
    """Print a run's job output."""
    from .manage import logs

    return logs(run_id, follow, _results_dir(results_dir))


@cli.command("cancel")
@click.argument("run_id")
@run_args.option("results_dir")
def cancel_cmd(run_id, results_dir):
    """Cancel a run's job (or terminate its instance) and confirm it stopped."""
    from .manage import cancel

    return cancel(run_id, _results_dir(results_dir))


@cli.command("cleanup")
@click.option("--all", "all_hosts", is_flag=True, help="Also stop runs launched from other hosts.")
@click.option("--dry-run", is_flag=True, help="Only list what would be stopped.")
def cleanup_cmd(all_hosts, dry_run):
    """Stop gpubench jobs, instances and containers left live with no launcher attached (after a crash), on every
    provider this host can reach."""
    from .manage import cleanup

    return cleanup(all_hosts, dry_run)


def _results_dir(given: str | None) -> str:
    return given or run_args.default_results_dir()  # the same folder `gpubench run` writes to


def _records_on_terminal(as_json: bool) -> None:
    if as_json:
        from . import progress

        progress.RECORDS_ON_TERMINAL = True


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> None:
    from .errors import BAD_INPUT, INTERRUPTED, LaunchError

    try:
        code = cli.main(args=argv, prog_name="gpubench-launch", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError:
        code = _fail("give a workload or a command (see gpubench-launch --help)", BAD_INPUT)
    except click.UsageError as exc:
        where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
        code = _fail(exc.format_message() + where, BAD_INPUT)
    except click.ClickException as exc:
        code = _fail(exc.format_message(), exc.exit_code or BAD_INPUT)
    except click.Abort:
        code = INTERRUPTED
    except LaunchError as exc:
        code = _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("gpubench-launch: interrupted\n")
        code = INTERRUPTED
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> int:
    from .redact import Redactor

    sys.stderr.write(f"gpubench-launch: error: {Redactor()(_one_line(message))}\n")
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    main()
