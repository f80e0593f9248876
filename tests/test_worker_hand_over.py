"""A worker gone before it read its job (stopped, or killed as it started) is told by its exit code, not by a
BrokenPipeError that would end the run without its record."""

from __future__ import annotations

import subprocess

from gpubench.run.worker import hand_over


def test_handing_a_job_to_a_worker_already_gone_does_not_raise():
    proc = subprocess.Popen(["true"], stdin=subprocess.PIPE, text=True)
    proc.wait()
    hand_over(proc, {"workload": "first-matmul", "setups": ["matmul"]})
    assert proc.stdin.closed and proc.returncode == 0
