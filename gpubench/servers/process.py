"""A server run as a subprocess of its own process group: started, waited for, stopped, never left behind.

The server gets its own session (so a signal reaches it and every process it starts) and is told by
the kernel to terminate if the process that started it dies (PR_SET_PDEATHSIG), so a killed worker
leaves no server holding the GPU. It takes SIGINT as its clean stop even where gpubench was started with SIGINT
ignored (`gpubench run ... &` in a script), which a child would otherwise inherit. Its output goes to a log file
(whose tail explains a failure) and, prefixed with the server's name, to our stderr, which the runner keeps in
run.log.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from gpubench.ports import free_port

PR_SET_PDEATHSIG = 1
_ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception)\b:.*")


class ServerFailed(RuntimeError):
    """The server exited or never became ready; str() ends with the tail of its log."""



def http_get(url: str, timeout: float = 5.0, method: str = "GET") -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _as_server_child() -> None:
    """Runs in the child before exec: SIGINT back to its default, so a Python server installs KeyboardInterrupt
    (Python installs none where SIGINT arrives ignored, and stop()'s first step would be waited out); then
    PR_SET_PDEATHSIG."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class ManagedServer:
    """Subclasses give `argv`, `env`, `ready_url` and `name`; this class runs the process."""

    name = "server"
    ready_timeout_s = 900.0

    def __init__(self, log_path: str | Path, host: str = "127.0.0.1", port: int | None = None, echo: bool = True):
        self.echo = echo
        self.host = host
        self.port = port or free_port()
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None
        self.ready_s: float | None = None

    # --- what a subclass provides
    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    @property
    def ready_url(self) -> str:
        raise NotImplementedError

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root (…/v1)."""
        return f"{self.root_url}/v1"

    # --- lifecycle
    def start(self, progress=None) -> float:
        """Start and wait until ready_url answers 200; returns seconds from start to ready."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=self.env(), start_new_session=True,
                                         preexec_fn=_as_server_child)
        except OSError as exc:
            raise ServerFailed(f"{self.name} could not be started ({self.argv()[0]}): {exc}") from exc
        self._relay = threading.Thread(target=self._copy_output, name=f"{self.name}-log", daemon=True)
        self._relay.start()
        try:
            self._wait_ready(started, progress)
        except BaseException:
            self.stop()
            raise
        self.ready_s = time.perf_counter() - started
        return self.ready_s

    def echoed(self, line: str) -> bool:
        """Whether a line of the server's output goes to our stderr too (every line: a subclass may keep some to the
        log file alone)."""
        return True

    def _copy_output(self) -> None:
        with open(self.log_path, "wb") as log:
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                if self.echo and self.echoed(text := line.decode(errors="replace").rstrip()):
                    sys.stderr.write(f"[{self.name}] {text}\n")
        self.proc.stdout.close()

    def _wait_ready(self, started: float, progress) -> None:
        deadline = started + self.ready_timeout_s
        last_report = 0.0
        while True:
            code = self.proc.poll()
            if code is not None:
                self._relay.join(timeout=5)  # the last lines explain why
                raise ServerFailed(f"{self.name} exited with code {code} before it was ready{self._cause()};"
                                   f" log tail:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                status, _ = http_get(self.ready_url, timeout=2)
                if status == 200:
                    return
            now = time.perf_counter()
            if now > deadline:
                raise ServerFailed(f"{self.name} not ready after {self.ready_timeout_s:.0f} s; log tail:\n"
                                   f"{self.log_tail()}")
            if progress and now - last_report > 10:
                progress("server_start", message=f"{self.name}: waiting {now - started:.0f} s")
                last_report = now
            time.sleep(0.25)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def death(self) -> str | None:
        """None while the server runs (or before it started); once it has exited, what a result says of it:
        '<name> exited with code N: <its last error line>'."""
        if self.proc is None or self.proc.poll() is None:
            return None
        self._relay.join(timeout=5)  # the last lines explain why
        code = self.proc.returncode
        signal_name = f" ({signal.Signals(-code).name})" if code < 0 and -code in signal.valid_signals() else ""
        return f"{self.name} exited with code {code}{signal_name}{self._cause()}"

    def stop(self, grace_s: float = 30.0, term_s: float = 10.0) -> None:
        """SIGINT to the server (its own clean shutdown, which stops what it started), then SIGTERM and
        SIGKILL to its whole group, each after the previous one's wait."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the leader's pid is the group id
        steps = ((os.kill, signal.SIGINT, grace_s), (os.killpg, signal.SIGTERM, term_s),
                 (os.killpg, signal.SIGKILL, 10.0))
        for send, sig, wait_s in steps:
            if self._wait_group(pgid, 0):
                break
            with contextlib.suppress(ProcessLookupError):
                send(pgid, sig)
            if self._wait_group(pgid, wait_s):
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self._relay.join(timeout=5)
        left = group_members(pgid)
        if left:
            raise ServerFailed(f"{self.name}: processes {left} survived SIGKILL")

    def _wait_group(self, pgid: int, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while True:
            self.proc.poll()  # reap the leader, or it stays a zombie member of the group
            if not group_members(pgid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _cause(self) -> str:
        """': <the last error line>' of the log, so a one-line error report says why."""
        for line in reversed(self.log_text().splitlines()):
            if _ERROR_LINE.search(line) and "See root cause" not in line and "see stack trace" not in line.lower():
                return ": " + _ERROR_LINE.search(line).group(0).strip()[:300]
        return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
