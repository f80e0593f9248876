"""The CLI options that send runs to a Slurm cluster (click only: read when the CLI is built)."""

from __future__ import annotations

import click

_PYTHON = "The job's gpubench is this Python environment on the nodes (instead of the [slurm] table's way)."
LAUNCH = [
    click.option("--slurm", metavar="CLUSTER.toml",
                 help="Run as Slurm batch jobs, one per --gpu, on the partitions this file's [slurm] table maps the"
                      " GPU names to (README: Your own cluster)."),
    click.option("--slurm-python", metavar="PATH", help=f"With --slurm: {_PYTHON[0].lower()}{_PYTHON[1:]}"),
]
LAUNCH_NAMES = ("slurm", "slurm_python")
SWEEP = [click.option("--slurm-python", metavar="PATH", help=f"A plan with a [slurm] table: {_PYTHON[0].lower()}"
                                                             f"{_PYTHON[1:]}")]
SWEEP_NAMES = ("slurm_python",)
