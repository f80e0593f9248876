"""Both CLIs: one table of exit codes (gpubench/exit_codes.py) in their --help, and --version."""

from __future__ import annotations

import subprocess

from clirun import BIN, base_env

from gpubench import __version__, exit_codes


def _run(tool: str, *args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], cwd=cwd, env=base_env({"COLUMNS": "2000"}), capture_output=True,
                          text=True, timeout=60)


def test_both_tools_show_the_same_exit_codes(tmp_path):
    table = exit_codes.epilog()
    for tool in ("gpubench", "gpubench-launch"):
        proc = _run(tool, "--help", cwd=tmp_path)
        assert proc.returncode == 0
        assert "".join(table.split()) in "".join(proc.stdout.split()), tool  # however click wraps it
    assert "3 launch: the job failed" in table and "5 results kept locally only: upload failed" in table


def test_both_tools_have_version(tmp_path):
    for tool in ("gpubench", "gpubench-launch"):
        proc = _run(tool, "--version", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.strip() == f"{tool}, version {__version__}"


def test_bad_input_is_2_in_both(tmp_path):
    assert _run("gpubench", "run", "no-such-study", cwd=tmp_path).returncode == exit_codes.BAD_INPUT
    assert _run("gpubench-launch", "no-such-study", "--gpu", "L40S", cwd=tmp_path).returncode == exit_codes.BAD_INPUT
