"""What `gpubench`'s commands share: the bad-input error, the results folder, the price a launcher set.

Both gpubench/cli/main.py and gpubench/cli/loadgen.py import this module; neither imports the other's
code (cli.py only adds the loadgen command to its group).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gpubench import exit_codes
from gpubench.params import PRICE, BadValue
from gpubench.run_args import default_results_dir  # noqa: F401 - the commands' results folder, declared there

EXIT_OK, EXIT_SETUP_FAILED, EXIT_BAD_INPUT = exit_codes.OK, exit_codes.SETUPS_NOT_OK, exit_codes.BAD_INPUT
EXIT_UPLOAD_FAILED, EXIT_INTERRUPTED = exit_codes.KEPT_LOCALLY, exit_codes.INTERRUPTED


class CliError(BadValue):
    """Bad input: one line, exit 2."""


def say_skipped(runs) -> None:
    """What reading stored runs skipped (gpubench/results/stored_runs.py), said the same way by every reader."""
    from gpubench.results.stored_runs import skipped_lines

    for line in skipped_lines(runs):
        click.echo(f"gpubench: {line}", err=True)


def check_output_file(path: Path, option: str) -> None:
    """A file a command is to write: a file name in a folder that exists and may be written; nothing is created."""
    folder = path.parent
    if path.is_dir():
        raise CliError(f"{option} {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise CliError(f"{option} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CliError(f"{option} {path}: not writable")


def price_from_launcher() -> float | None:
    """A launcher's price: one (GPUBENCH_PRICE_USD_PER_HOUR), or one per candidate GPU, matched to this GPU."""
    from gpubench import pricing
    from gpubench.run import environment

    if os.environ.get("GPUBENCH_PRICE_USD_PER_HOUR"):
        value = os.environ["GPUBENCH_PRICE_USD_PER_HOUR"]
        problem = PRICE.problem(value)
        if problem:
            raise CliError(f"GPUBENCH_PRICE_USD_PER_HOUR {problem} (got {value})")
        return float(value)
    if not os.environ.get("GPUBENCH_PRICES_USD_PER_HOUR"):
        return None
    try:
        prices = pricing.parse_prices(os.environ["GPUBENCH_PRICES_USD_PER_HOUR"])
    except pricing.PriceError as exc:
        raise CliError(str(exc)) from None
    gpus = environment.gpu_names()
    match = pricing.price_for(prices, gpus)
    if match is None:
        click.echo(f"gpubench: no price for {', '.join(gpus) or 'this machine'} among {', '.join(prices)};"
                   " costs are left out", err=True)
        return None
    click.echo(f"gpubench: costed at {match[0]}'s ${match[1]:g}/h", err=True)
    return match[1]


def run_id_for(given: str | None, workload: str) -> str:
    """The run's id: given (--run-id, or a launcher's GPUBENCH_RUN_ID), checked, else a new one."""
    from gpubench import runid

    run_id = given or os.environ.get("GPUBENCH_RUN_ID") or runid.new_run_id(workload)
    if not runid.is_run_id(run_id):
        raise CliError(f"bad run id {run_id!r}")
    return run_id


def deliver(run_dir, target, outcome: str) -> int:
    """After a run: its folder closed and named, uploaded when a store was given; the exit code for the outcome (ok,
    interrupted, else failed), made KEPT_LOCALLY when an ok run's upload failed."""
    from gpubench import stores

    run_dir.close()
    click.echo(f"results: {run_dir.path}", err=True)
    code = {"ok": EXIT_OK, "interrupted": EXIT_INTERRUPTED}.get(outcome, EXIT_SETUP_FAILED)
    if target:
        ok, message = stores.deliver(run_dir.path, target)
        click.echo(message, err=True)
        if not ok and code == EXIT_OK:
            code = EXIT_UPLOAD_FAILED
    return code


def safe_argv() -> list[str]:
    """The command line as given; gpubench takes no secrets as arguments."""
    return ["gpubench", *sys.argv[1:]]
