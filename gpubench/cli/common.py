"""What `gpubench`'s commands share: the bad-input error, the results folder, the price a launcher set.

Both gpubench/cli/main.py and gpubench/loadgen/loadgen_cli.py import this module; neither imports the other's
code (cli.py only adds the loadgen command to its group).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gpubench import exit_codes

EXIT_OK, EXIT_SETUP_FAILED, EXIT_BAD_INPUT = exit_codes.OK, exit_codes.SETUPS_NOT_OK, exit_codes.BAD_INPUT
EXIT_UPLOAD_FAILED, EXIT_INTERRUPTED = exit_codes.KEPT_LOCALLY, exit_codes.INTERRUPTED


class CliError(click.ClickException):
    exit_code = EXIT_BAD_INPUT


def default_results_dir() -> str:
    """GPUBENCH_RESULTS_DIR; inside a Runcrate job, its output folder (kept as artifacts); else ./gpubench-results."""
    from gpubench.stores import DEFAULT_RESULTS_DIR

    if os.environ.get("GPUBENCH_RESULTS_DIR"):
        return os.environ["GPUBENCH_RESULTS_DIR"]
    if os.environ.get("RUNCRATE_OUTPUT_DIR"):
        return str(Path(os.environ["RUNCRATE_OUTPUT_DIR"]) / DEFAULT_RESULTS_DIR)
    return DEFAULT_RESULTS_DIR


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
        try:
            return float(os.environ["GPUBENCH_PRICE_USD_PER_HOUR"])
        except ValueError:
            raise CliError("GPUBENCH_PRICE_USD_PER_HOUR is not a number") from None
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


def safe_argv() -> list[str]:
    """The command line as given; gpubench takes no secrets as arguments."""
    return ["gpubench", *sys.argv[1:]]
