"""The CLI option that sends a run to a Docker host (click only: read when the CLI is built)."""

from __future__ import annotations

import click

LAUNCH = [
    click.option("--docker-host", metavar="URL",
                 help="Run the workload's pinned image on this Docker engine: unix:///var/run/docker.sock, or"
                      " ssh://user@host (its docker CLI answers over SSH). --gpu NAME[:N] names the host's GPU and"
                      " how many to use (default: all it has; with --smoke on a host without GPUs, its CPU)."),
]
LAUNCH_NAMES = ("docker_host",)
SWEEP: list = []
SWEEP_NAMES: tuple[str, ...] = ()
