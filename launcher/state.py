"""Which launches are still attached to a launcher: one small file per live launch on this host.

A launcher writes `<state-dir>/launches/<run-id>.json` before it asks for a machine (pid, the
pid's start time, host, and the job/instance/ssh-key ids as they become known) and removes it
when the machine is confirmed stopped. `cleanup` treats a gpubench job or instance as orphaned
when the launcher named there is gone. Jobs also carry the launcher in a tag, for hosts that
lost the file. State dir: GPUBENCH_STATE_DIR, else $XDG_STATE_HOME/gpubench, else ~/.local/state/gpubench.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    if os.environ.get("GPUBENCH_STATE_DIR"):
        return Path(os.environ["GPUBENCH_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpubench"


def host_id() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:12]


def process_start(pid: int) -> str:
    """The pid's start time in clock ticks since boot ('' where /proc is missing): a reused pid differs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def launcher_tag(pid: int | None = None) -> str:
    """`<host>.<pid>.<start>`: who launched a job, in a form that survives as a tag value."""
    pid = os.getpid() if pid is None else pid
    return f"{host_id()}.{pid}.{process_start(pid) or 0}"


def launcher_alive(tag: str) -> bool | None:
    """True/False for a launcher of this host; None when the tag names another host (or is unreadable)."""
    try:
        host, pid_text, start = tag.split(".")
        pid = int(pid_text)
    except ValueError:
        return None
    if host != host_id():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = process_start(pid)
    return start in ("0", now) if now else True


class LaunchState:
    def __init__(self, run_id: str, root: Path | None = None):
        self.run_id = run_id
        self.path = (root or state_dir()) / "launches" / f"{run_id}.json"
        self.facts: dict[str, Any] = {}

    def save(self, **facts: Any) -> None:
        self.facts.update(facts)
        self.facts.setdefault("run_id", self.run_id)
        self.facts["launcher"] = launcher_tag()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.facts, indent=2) + "\n")
            tmp.replace(self.path)
        except OSError:
            pass  # the job tags still name the launcher; cleanup works from those

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()


def all_states(root: Path | None = None) -> list[dict[str, Any]]:
    folder = (root or state_dir()) / "launches"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            facts = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        facts["_path"] = str(path)
        out.append(facts)
    return out
