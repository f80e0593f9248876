"""What a person sees on a terminal: a live view of the run instead of its JSON records.

Records go to stdout as JSON Lines when stdout is a pipe or a file (or with --json); on a terminal the
same records feed this view (setup, phase, progress within the phase, latest numbers) and the run
folder keeps them all. Human lines print above the view; the view vanishes when the run ends, leaving
those lines and the summary table.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field


def wants_records(as_json: bool) -> bool:
    """JSON Lines on stdout: asked for, or stdout is not a terminal (a pipe, a file)."""
    return as_json or not sys.stdout.isatty()


def terminal_width() -> int | None:
    """How many columns the person's terminal has (stdout's, where the live view draws, else stderr's): COLUMNS when
    set, as rich reads it, else the terminal's own size; None when neither stream is a terminal (a log, a pipe)."""
    ttys = [stream for stream in (sys.stdout, sys.stderr) if _isatty(stream)]
    if not ttys:
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(ttys[0].fileno()).columns or 80
    except (OSError, ValueError):
        return 80


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced by a test harness, or closed
        return False


@dataclass
class RunState:
    title: str = ""
    smoke: bool = False
    setups_done: int = 0
    setups_total: int = 0
    setup: str = ""
    repeat: int | None = None
    phase: str = ""
    done: int | None = None
    total: int | None = None
    message: str = ""
    latest: str = ""
    started: float = field(default_factory=time.monotonic)
    phase_started: float = field(default_factory=time.monotonic)


class LiveView:
    """A file-like sink for record lines (RunDir's echo) that draws them as a rich Live panel on stdout."""

    def __init__(self):
        from rich.console import Console

        self.console = Console(highlight=False)
        self.state = RunState()
        self._live = None
        self._buffer = ""

    def __enter__(self) -> LiveView:
        from rich.live import Live

        # transient: the panel goes away at the end; what was printed above it (results, summary) stays.
        self._live = Live(get_renderable=self._render, console=self.console, refresh_per_second=4, transient=True,
                          redirect_stdout=True, redirect_stderr=True)
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # --- the sink RunDir writes record lines to ------------------------------------------------------------------
    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            if line.strip():
                self.feed(json.loads(line))
        return len(text)

    def flush(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def print(self, text: str) -> None:
        """A human line (the runner's echo), above the panel."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    # --- records -> state ---------------------------------------------------------------------------------------
    def feed(self, record: dict) -> None:
        s = self.state
        kind = record.get("kind")
        if kind == "run_started":
            s.title = f"{record['workload']}  {record['run_id']}"
            s.smoke = bool(record.get("smoke"))
            s.setups_total = len(record.get("setups", [])) * int(record.get("repeats") or 1)
        elif kind == "progress":
            if record.get("phase") == "setup":  # the runner's own: which setup starts, of how many
                s.setup, s.repeat = record.get("setup") or "", record.get("repeat")
                s.setups_done = record.get("done") or 0
                s.setups_total = record.get("total") or s.setups_total
                s.phase, s.done, s.total, s.message = "starting", None, None, ""
            else:
                if record.get("phase") != s.phase:
                    s.phase_started = time.monotonic()
                s.phase = record.get("phase") or ""
                s.done, s.total = record.get("done"), record.get("total")
                s.message = record.get("message") or ""
        elif kind == "result":
            s.setups_done += 1
            metrics = record.get("metrics") or {}
            shown = ", ".join(f"{name}={_fmt(m['value'])} {m['unit']}".rstrip()
                              for name, m in list(metrics.items())[:3])
            s.latest = f"{record['setup']}: {record['status']}" + (f"  {shown}" if shown else "")
        elif kind == "run_finished":
            s.phase, s.done, s.total, s.message = f"finished: {record.get('status')}", None, None, ""
        self.flush()

    def _render(self):
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        s = self.state
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        grid.add_row("run", Text(s.title or "starting"))
        if s.smoke:
            grid.add_row("", Text("--smoke: tests the code path; these numbers are not a benchmark", style="yellow"))
        elapsed = time.monotonic() - s.started
        grid.add_row("setups", f"{s.setups_done}/{s.setups_total} done, {elapsed:.0f} s")
        if s.setup:
            grid.add_row("setup", Text(s.setup + (f" (repeat {s.repeat})" if s.repeat else "")))
        if s.phase:
            line = Table.grid(padding=(0, 1))
            cells = [Text(s.phase)]
            if s.total:
                cells.append(ProgressBar(total=s.total, completed=s.done or 0, width=24))
                cells.append(f"{s.done or 0}/{s.total}")
            else:
                cells.append(f"{time.monotonic() - s.phase_started:.0f} s")
            if s.message:
                cells.append(Text(s.message))
            line.add_row(*cells)
            grid.add_row("phase", line)
        if s.latest:
            grid.add_row("latest", Text(s.latest))
        return grid


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
