"""SIGTERM stops a run as Ctrl-C does. `docker stop`, a plain `kill` and Slurm's `scancel` without a signal option
send it: the run then records `interrupted`, writes its summary and exits 130, keeping what it measured, instead of
ending mid-record."""

from __future__ import annotations

import signal


def terminate_as_interrupt() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread, where a run handles Ctrl-C."""
    signal.signal(signal.SIGTERM, _interrupt)


def stopped_from_outside(returncode: int | None) -> bool:
    """A worker ended by SIGTERM was stopped with the run (scancel and a process group's kill reach every process),
    not failed: the run is interrupted."""
    return returncode == -signal.SIGTERM


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
