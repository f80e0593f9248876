"""Run a console script on a pseudo-terminal, as a person at a terminal would: stdout and stderr are the tty."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from clirun import BIN, base_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def on_terminal(tool: str, *args: str, cwd: Path, env: dict[str, str] | None = None,
                timeout: float = 300) -> tuple[int, str]:
    """(exit code, what the terminal showed, escape codes stripped)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(BIN / tool), *args], cwd=cwd, env=base_env({"COLUMNS": "120", **(env or {})}),
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed: the process is gone
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    code = proc.wait(timeout=30)
    return code, ANSI.sub("", b"".join(chunks).decode(errors="replace")).replace("\r", "")
