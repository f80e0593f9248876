"""The exit codes of `gpubench` and `gpubench-launch`: one table, one meaning per number.

  0    every setup ran ok or was skipped for a stated reason (no engine, too few GPUs), and at least one ran ok
  1    the run finished but a setup failed (error, oom, partial results) or none ran at all (every setup skipped),
       or `compare --fail-on` found a regression
  2    bad input, a missing optional dependency, or a refused launch: nothing was run, written or billed
  3    gpubench-launch: the job failed, timed out, or was cancelled by someone else (a sweep: a cell has no result,
       e.g. its GPU type had no capacity)
  4    gpubench-launch: the launcher stopped the job at --max-cost or --max-minutes
  5    the results are kept locally only: the store refused the upload (`gpubench upload` retries it), or the
       launcher lost the API / could not confirm that a machine stopped
  130  interrupted (Ctrl-C / SIGTERM); what was measured so far is kept
"""

from __future__ import annotations

OK = 0
SETUPS_NOT_OK = 1
BAD_INPUT = 2
JOB_NOT_SUCCEEDED = 3
LIMIT_REACHED = 4
KEPT_LOCALLY = 5  # upload failed, or launcher trouble after the launch
INTERRUPTED = 130

TABLE = {
    OK: "every setup ok or skipped for a stated reason, at least one ok",
    SETUPS_NOT_OK: "a setup failed (error, oom), no setup ran, or compare --fail-on found a regression",
    BAD_INPUT: "bad input or missing dependency: nothing run, written or billed",
    JOB_NOT_SUCCEEDED: "launch: the job failed, timed out or was cancelled by someone else (sweep: a cell has no"
                       " result)",
    LIMIT_REACHED: "launch: --max-cost or --max-minutes reached",
    KEPT_LOCALLY: "results kept locally only: upload failed or launcher trouble",
    INTERRUPTED: "interrupted",
}


def epilog() -> str:
    """The table as one paragraph, for both tools' --help."""
    return "Exit codes: " + "; ".join(f"{code} {text}" for code, text in TABLE.items()) + "."
