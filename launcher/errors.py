"""The launcher's user-facing failures; its exit codes are gpubench's (gpubench/exit_codes.py).

Several runs: 130 if any was interrupted, otherwise the highest code.
"""

from __future__ import annotations

from gpubench.exit_codes import (  # noqa: F401  (re-exported: the launcher's modules use errors.X)
    BAD_INPUT,
    INTERRUPTED,
    JOB_NOT_SUCCEEDED,
    KEPT_LOCALLY,
    LIMIT_REACHED,
    OK,
    SETUPS_NOT_OK,
)

LAUNCHER_TROUBLE = KEPT_LOCALLY


class LaunchError(Exception):
    """A failure before anything was launched; str() is one line, shown as `gpubench-launch: error: ...`."""

    def __init__(self, message: str, exit_code: int = BAD_INPUT):
        super().__init__(" ".join(str(message).split()))
        self.exit_code = exit_code


def combine(codes: list[int]) -> int:
    """One exit code for several runs."""
    if INTERRUPTED in codes:
        return INTERRUPTED
    return max(codes, default=OK)


def refuse_unknown_keys(table: dict, known: set[str] | frozenset[str], where: str, within: str = "") -> None:
    """One line naming the first key a plan's table should not have, and the keys it may have."""
    unknown = sorted(set(table) - known)
    if unknown:
        inside = f" in {within}" if within else ""
        raise LaunchError(f"{where}: unknown key {unknown[0]!r}{inside} (keys: {', '.join(sorted(known))})")
