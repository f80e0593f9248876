"""Run the gpubench console scripts as a user would: a subprocess, its own environment and folder."""

from __future__ import annotations

import json
import os
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


def gpubench(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> Completed:
    proc = subprocess.run([str(BIN / "gpubench"), *args], cwd=cwd, env=base_env(env), capture_output=True,
                          text=True, timeout=timeout)
    return Completed(proc.returncode, proc.stdout, proc.stderr)
