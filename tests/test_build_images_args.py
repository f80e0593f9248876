"""tools/build_images.sh's arguments: an unknown image name stops it before any docker command, in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpubench.catalog import WORKLOADS
from gpubench.images import REPO, STACKS

SCRIPT = REPO / "tools/build_images.sh"


def run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The script with a `docker` on PATH that only records that it was called."""
    calls = tmp_path / "docker-calls"
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "docker").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexit 1\n')
    (fake / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_unknown_image_is_one_line_exit_2_naming_every_valid_image_and_runs_no_docker(tmp_path):
    done, calls = run(tmp_path, "train-compile", "no-such-image")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "no-such-image" in lines[0]
    valid = lines[0].split("valid:", 1)[1].split()
    assert sorted(valid) == sorted([s.name for s in STACKS] + [w.name for w in WORKLOADS])
    assert calls == []

