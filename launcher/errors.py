"""The launcher's user-facing failures and its exit codes.

Exit codes of `gpubench-launch` (several runs: 130 if interrupted, otherwise the highest):
  0    every job succeeded and every setup result is ok
  1    the job succeeded but a setup was not ok, or the results are incomplete
  2    bad input or a refused launch: nothing was started (or billed)
  3    the job failed, timed out, or was cancelled by someone else
  4    the launcher cancelled the job: --max-cost or --max-minutes was reached
  5    launcher trouble after the launch: lost the API, could not confirm a machine stopped,
       or the store refused the upload (the results are kept locally)
  130  interrupted (Ctrl-C / SIGTERM): the job was cancelled and what arrived was stored
"""

from __future__ import annotations

OK = 0
SETUPS_NOT_OK = 1
BAD_INPUT = 2
JOB_NOT_SUCCEEDED = 3
LIMIT_REACHED = 4
LAUNCHER_TROUBLE = 5
INTERRUPTED = 130


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
