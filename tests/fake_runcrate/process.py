"""A bash command run as its own process group, its output handed on as it is written."""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

OutputSink = Callable[[str], None]
"""Called with each fragment of output, stdout's and stderr's in the order they were read (combined, as
the API gives them: nothing says which pipe a fragment came from)."""


# Every process started for a fake machine carries this variable, so that the machine going
# away can kill even those that left its process groups (setsid, double forks).
MACHINE_MARKER = "FAKE_RUNCRATE_MACHINE"


def command_environment(extra: Mapping[str, str], machine_id: str) -> dict[str, str]:
    """This process's environment with ``extra`` over it, and the venv's bin first on PATH so
    console scripts such as ``gpubench`` are found."""
    env = dict(os.environ)
    env.update(extra)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", os.defpath)])
    env[MACHINE_MARKER] = machine_id
    return env


def kill_machine(machine_id: str) -> None:
    """SIGKILL every process started for that machine, wherever it went.

    A process in the middle of an exec reads an empty environment (the kernel has switched it to the new program's
    memory and not yet set its environment there), and a chain such as ``setsid nohup sleep`` is three execs: such
    processes are read again until they show one, for up to ``EXEC_WINDOW_S``."""
    needle = f"{MACHINE_MARKER}={machine_id}".encode() + b"\0"
    unsure = _kill_marked(Path("/proc").iterdir(), needle)
    deadline = time.monotonic() + EXEC_WINDOW_S
    while unsure and time.monotonic() < deadline:
        time.sleep(0.002)
        unsure = _kill_marked(unsure, needle)


EXEC_WINDOW_S = 1.0
_PF_KTHREAD = 0x00200000  # /proc/PID/stat's flags: a kernel thread (no environment, ever)


def _kill_marked(entries: Iterable[Path], needle: bytes) -> list[Path]:
    """SIGKILLs the processes among ``entries`` whose environment holds ``needle``; answers the live user processes
    whose environment read empty."""
    unsure = []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if not environ:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                if fields[0] not in ("Z", "X") and not int(fields[6]) & _PF_KTHREAD:
                    unsure.append(entry)
                continue
        except OSError:
            continue
        if needle in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
    return unsure


def kill_group(pid: int) -> None:
    """SIGKILL a process group, as a machine going away would."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class BashProcess:
    """``bash -c command`` in ``cwd`` on a fake machine; output fragments go to ``sink`` in the order read."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], sink: OutputSink, machine_id: str) -> None:
        self._machine_id = machine_id
        self._popen = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._sink_lock = threading.Lock()
        self._readers = [
            threading.Thread(target=self._pump, args=(self._popen.stdout, sink), daemon=True),
            threading.Thread(target=self._pump, args=(self._popen.stderr, sink), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def exit_code(self) -> int | None:
        """The exit status once the process was reaped (negative: killed by that signal)."""
        return self._popen.returncode

    def wait(self, timeout_s: float | None = None) -> int | None:
        """The exit code, or None if still running after ``timeout_s``."""
        try:
            return self._popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def finish(self) -> int:
        """Kill whatever is left of the machine's processes and drain the output; the exit code."""
        kill_group(self._popen.pid)
        kill_machine(self._machine_id)
        code = self._popen.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def _pump(self, pipe, sink: OutputSink) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = pipe.fileno()
        try:
            while True:
                data = os.read(fd, 65536)
                text = decoder.decode(data, final=not data)
                if text:
                    with self._sink_lock:
                        sink(text)
                if not data:
                    return
        finally:
            pipe.close()
