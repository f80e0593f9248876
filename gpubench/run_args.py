"""`gpubench run`'s arguments, declared once, with their checks, and written back as argv.

The ones that travel with a run to where it runs: the CLI takes them (gpubench/cli/main.py), `--docker` passes
them to the image's own `gpubench run` (gpubench/run/docker_run.py), the launcher writes them into the job's
command (launcher/plan.py) and a sweep plan's `args` are parsed by them (launcher/sweep/plan.py). So a bound
(`--repeats` 1 to 100) or a default (the results folder) cannot differ between the four.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

import click

from gpubench.params import PRICE, Number

MAX_REPEATS = 100
DEFAULT_RESULTS_DIR = "gpubench-results"

# name -> (option declarations, click.option keywords); the name is the RunArgs field.
_OPTIONS: dict[str, tuple[tuple[str, ...], dict]] = {
    "setups": (("--setups",), {"multiple": True, "metavar": "A,B", "help": "Setups to run (default: all)."}),
    "smoke": (("--smoke",), {"is_flag": True,
                             "help": "A tiny size that runs on a CPU in seconds, same code path."}),
    "repeats": (("--repeats",), {"type": Number(f"a whole number from 1 to {MAX_REPEATS}", 1, False, MAX_REPEATS,
                                                whole=True),
                                 "metavar": "N",
                                 "help": f"Runs per setup, 1 to {MAX_REPEATS}; summaries give median/min/max/CV"
                                         " [default: 1]."}),
    "overrides": (("--set", "overrides"), {"multiple": True, "metavar": "NAME=VALUE",
                                           "help": "Override a config field (gpubench show WORKLOAD lists them)."}),
    "weights": (("--weights",), {"type": click.Choice(["auto", "random"]),
                                 "help": "auto: the study's weights, found locally or an error naming the missing "
                                         "ones; random: build the models from their configs (same compute)"
                                         " [default: auto]."}),
    "price": (("--price",), {"type": PRICE, "metavar": "USD_PER_HOUR",
                             "help": "Hourly GPU price, for cost per unit of output [env GPUBENCH_PRICE_USD_PER_HOUR,"
                                     " or the entry of GPUBENCH_PRICES_USD_PER_HOUR matching this GPU]."}),
    "run_id": (("--run-id",), {"hidden": True, "help": "[env GPUBENCH_RUN_ID] set by a launcher."}),
    "on_cpu": (("--cpu", "on_cpu"), {"is_flag": True,
                                     "help": "Run the full-size study on a machine with no GPU anyway (it can take"
                                             " hours)."}),
}
# Where a run's records go, on the machine that runs it: `gpubench run` and `gpubench loadgen` take these too, but
# they do not travel with a run (a launcher or `--docker` sets its own).
_LOCAL: dict[str, tuple[tuple[str, ...], dict]] = {
    "results_dir": (("--results-dir",), {"default": None, "help": "Local folder for run folders [default: "
                                         "$GPUBENCH_RESULTS_DIR, else ./gpubench-results]."}),
    "store": (("--store",), {"default": None, "metavar": "URL",
                             "help": "s3://bucket/prefix to upload to (default: local folder only)."}),
    "as_json": (("--json", "as_json"), {"is_flag": True,
                                        "help": "JSON Lines records on stdout even on a terminal (the default for"
                                                " pipes and files)."}),
}


def option(name: str, **changes):
    """The click option of one argument (`changes`: another help text, say), as `gpubench run` declares it."""
    decls, attrs = _LOCAL[name] if name in _LOCAL else _OPTIONS[name]
    return click.option(*decls, **{**attrs, **changes})


def options(*names: str):
    """A decorator adding these arguments' options (all that travel, when none are named)."""
    def decorate(f):
        for name in reversed(names or tuple(_OPTIONS)):
            f = option(name)(f)
        return f

    return decorate


def default_results_dir() -> str:
    """GPUBENCH_RESULTS_DIR; inside a Runcrate job, its output folder (kept as artifacts); else ./gpubench-results."""
    if os.environ.get("GPUBENCH_RESULTS_DIR"):
        return os.environ["GPUBENCH_RESULTS_DIR"]
    if os.environ.get("RUNCRATE_OUTPUT_DIR"):
        return str(Path(os.environ["RUNCRATE_OUTPUT_DIR"]) / DEFAULT_RESULTS_DIR)
    return DEFAULT_RESULTS_DIR


def split_setups(values) -> tuple[str, ...]:
    """--setups A,B --setups C -> (A, B, C); a str is one value."""
    values = [values] if isinstance(values, str) else list(values or ())
    return tuple(s.strip() for v in values for s in v.split(",") if s.strip())


@dataclass(frozen=True)
class RunArgs:
    """What a `gpubench run` is asked for; None and empty mean "not given" (the run's own default)."""

    workload: str
    setups: tuple[str, ...] = ()
    smoke: bool = False
    repeats: int | None = None
    overrides: tuple[str, ...] = ()
    weights: str | None = None
    price: float | None = None
    run_id: str | None = None
    on_cpu: bool = False

    @classmethod
    def of(cls, workload: str, **params) -> RunArgs:
        """From click's parameters (or any subset of the fields); --setups values are split at commas."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in params.items() if k in known}
        values["setups"] = split_setups(values.get("setups"))
        values["overrides"] = tuple(values.get("overrides") or ())
        return cls(workload=workload, **values)

    def to_argv(self) -> list[str]:
        """`run WORKLOAD ...`: only what was given, in one order, so a command reads the same wherever it is built."""
        args = ["run", self.workload]
        if self.setups:
            args += ["--setups", ",".join(self.setups)]
        if self.smoke:
            args.append("--smoke")
        if self.repeats is not None:
            args += ["--repeats", str(self.repeats)]
        for pair in self.overrides:
            args += ["--set", pair]
        if self.weights:
            args += ["--weights", self.weights]
        if self.price is not None:
            args += ["--price", repr(self.price)]
        if self.run_id:
            args += ["--run-id", self.run_id]
        if self.on_cpu:
            args.append("--cpu")
        return args

    @classmethod
    def from_argv(cls, argv: list[str], allowed: tuple[str, ...] | None = None) -> RunArgs:
        """The arguments of `run WORKLOAD ...` (or of `WORKLOAD ...`); only `allowed` options when given. Bad
        input raises click.UsageError or params.BadValue, each one line."""
        argv = list(argv[1:] if argv[:1] == ["run"] else argv)
        names = allowed or tuple(_OPTIONS)
        params = [click.Argument(["workload"])]
        for name in names:
            decls, attrs = _OPTIONS[name]
            params.append(click.Option(list(decls), **attrs))
        command = click.Command("run", params=params, add_help_option=False)
        parsed = command.make_context("run", argv).params
        return cls.of(parsed.pop("workload"), **parsed)
