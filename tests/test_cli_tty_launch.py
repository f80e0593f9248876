"""`gpubench-launch` on a terminal: the live view and the summary, no records, unless --json (as `gpubench run`)."""

from __future__ import annotations

import test_launch_support as support
from terminal import on_terminal
from test_launch_support import emitter_command

fake, launcher_env = support.fake, support.launcher_env


def _records(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if line.lstrip().startswith('{"schema_version"')]


def test_records_on_a_terminal_only_with_json(fake, launcher_env, tmp_path):
    args = ("train-compile", "--gpu", "L40S", "--smoke", "--job-command", emitter_command())
    code, screen = on_terminal("gpubench-launch", *args, cwd=tmp_path, env=launcher_env)
    assert code == 0, screen
    assert not _records(screen) and "gpubench-launch summary" in screen and "vs eager-sdpa" in screen
    code, screen = on_terminal("gpubench-launch", *args, "--json", cwd=tmp_path, env=launcher_env)
    assert code == 0, screen
    assert len(_records(screen)) == 6
