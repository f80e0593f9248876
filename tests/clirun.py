"""Run the gpubench console scripts as a user would: a subprocess, its own environment and folder."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


@dataclass
class Completed:
    code: int
    stdout: str
    stderr: str

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without AWS or gpubench variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/gpubench-test"
    env.update(extra or {})
    return env


def as_foreground_job() -> None:
    """A Popen preexec_fn: the child takes Ctrl-C as a terminal's foreground job does. A test session started in the
    background (`cmd &` in a script) has SIGINT ignored, which its children inherit, and Python then installs no
    KeyboardInterrupt for it: a test that sends SIGINT would see it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def gpubench(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> Completed:
    proc = subprocess.run([str(BIN / "gpubench"), *args], cwd=cwd, env=base_env(env), capture_output=True,
                          text=True, timeout=timeout)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


# The shapes of gpubench run's own lines on a non-terminal stderr: the runner's progress and result lines, notes,
# the summary table, where the results are. Anything else on the terminal is a library's or a server's.
OWN_LINE = re.compile(r"^(|\[\d+/\d+\] .*|  \S+: .*|> .*|\|.*|results: .*|--smoke: .*|uploaded .*"
                      r"|the failed setups' tracebacks .*|What bounded each result .*|- \S+ \(repeat \d+\): .*)$")


def stopped(*args: str, cwd: Path, stop, env: dict[str, str] | None = None, timeout: float = 120,
            **popen) -> Completed:
    """`gpubench ARGS` in a session of its own, `stop(process, line)` called on each stdout line as it comes until it
    answers True (it sends the signal); then the rest is read. The process group is killed if it outlives `timeout`."""
    proc = subprocess.Popen([str(BIN / "gpubench"), *args], cwd=cwd, env=env or base_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **popen)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if stop(proc, line):
                break
        lines += proc.stdout.readlines()
        err = proc.stderr.read()
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return Completed(code, "".join(lines), err)


def hiding_modules(tmp_path: Path, *names: str) -> dict[str, str]:
    """The env under which the CLIs can't import `names`, as on a machine where they were never installed: a
    sitecustomize that puts None in their sys.modules slots."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(f"import sys\nfor name in {names!r}:\n    sys.modules[name] = None\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def third_party_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not OWN_LINE.match(line)]


def run_folder(stderr: str, cwd: Path) -> Path:
    """The run folder a `gpubench run` named in its last line."""
    [line] = [line for line in stderr.splitlines() if line.startswith("results: ")][-1:]
    return cwd / line.removeprefix("results: ")
