"""`env` and `images`: human text on a terminal, JSON with --json or through a pipe (as before)."""

from __future__ import annotations

import json

from clirun import gpubench
from terminal import on_terminal


def test_env_is_readable_on_a_terminal_and_json_elsewhere(tmp_path):
    code, screen = on_terminal("gpubench", "env", cwd=tmp_path)
    assert code == 0 and "python" in screen and "gpus" in screen and "{" not in screen
    code, screen = on_terminal("gpubench", "env", "--json", cwd=tmp_path)
    assert code == 0 and json.loads(screen)["python"]
    piped = gpubench("env", cwd=tmp_path)
    assert piped.code == 0 and json.loads(piped.stdout)["python"]


def test_images_is_readable_on_a_terminal_and_json_elsewhere(tmp_path):
    code, screen = on_terminal("gpubench", "images", cwd=tmp_path)
    assert code == 0 and "train-compile" in screen and '"name"' not in screen
    code, screen = on_terminal("gpubench", "images", "--json", cwd=tmp_path)
    assert code == 0 and json.loads(screen.splitlines()[0])["name"]
    piped = gpubench("images", cwd=tmp_path)
    assert {row["name"] for row in piped.records()} >= {"train-compile", "whisper"}
