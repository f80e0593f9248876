"""The job's `gpubench run` command, checked on this machine before any API request.

The check is the job's own code: `gpubench run ... --check` (the workload's setups, the --set values against its
config declarations, --repeats, --weights) in a process of its own, so the launcher still imports no workload code.
A command it refuses is one line and exit 2: nothing is submitted or billed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from .errors import LaunchError

SECRETS = ("RUNCRATE_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")  # the check needs none of them
TIMEOUT_S = 120


def check_run_command(command: str) -> None:
    args = shlex.split(command)
    if args[:2] != ["gpubench", "run"]:
        raise ValueError(f"not a gpubench run command: {command}")
    env = {name: value for name, value in os.environ.items() if name not in SECRETS}
    try:
        check = "from gpubench.cli.main import main; main()"
        proc = subprocess.run([sys.executable, "-c", check, *args[1:], "--check"],
                              capture_output=True, text=True, env=env, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise LaunchError(f"checking the job's command took over {TIMEOUT_S} s: {command}") from None
    if proc.returncode == 0:
        return
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    reason = lines[-1].removeprefix("gpubench: error: ") if lines else f"exit status {proc.returncode}"
    raise LaunchError(f"{reason} (the job's `gpubench run` refuses it; nothing was submitted)")
