"""`gpubench loadgen` against a server it cannot connect to, or with inputs it cannot use: one line, exit 2, and no
results folder."""

from __future__ import annotations

import socket

import pytest
from clirun import gpubench


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


@pytest.mark.parametrize("url, says", [
    ("http://127.0.0.1:{closed}/v1", "cannot connect to 127.0.0.1"),  # the port is picked when the test runs
    ("http://nosuchhost.invalid:8000/v1", "cannot connect to nosuchhost.invalid:8000"),
])
def test_unreachable_server_is_bad_input(tmp_path, url, says):
    url = url.format(closed=closed_port())
    result = gpubench("loadgen", "--base-url", url, "--model", "m", cwd=tmp_path)
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: --base-url ") and says in line
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, says", [
    (["--tokenizer", "/nonexistent"], "'/nonexistent' does not exist"),
    (["--vocab-size", "1"], "vocab_size must be at least 2"),
    (["--timeout", "0"], "timeout must be a positive number of seconds"),
])
def test_unusable_options_are_bad_input(tmp_path, args, says):
    result = gpubench("loadgen", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", *args, cwd=tmp_path)
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: ") and says in line
    assert list(tmp_path.iterdir()) == []
