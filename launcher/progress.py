"""What a person sees on stderr: a live table per run (rich, on a terminal) or one line per event
(elsewhere), and a summary table at the end. Records themselves go to stdout and the run folder."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from gpubench.schema import Progress, RunFinished, RunStarted, SetupResult


@dataclass
class RunLine:
    run_id: str
    gpu: str
    status: str = "planned"
    obtained: str = ""
    region: str = ""
    phase: str = ""
    setups_done: int = 0
    setups_total: int = 0
    metrics: str = ""
    cost_usd: float | None = None
    started: float = field(default_factory=time.monotonic)
    last_lines: list[str] = field(default_factory=list)


def format_metrics(metrics: dict, limit: int = 2) -> str:
    parts = []
    for name, metric in list(metrics.items())[:limit]:
        value = getattr(metric, "value", None)
        if value is None:
            value = getattr(metric, "median", None)
        parts.append(f"{name}={value:.4g} {metric.unit}".rstrip())
    return ", ".join(parts)


def add_columns(table, names: tuple[str, ...]) -> None:
    """The first column, the run id, is never broken (it is what a person copies into `gpubench-launch status`);
    the others fold to fit the terminal."""
    table.add_column(names[0], no_wrap=True)
    for name in names[1:]:
        table.add_column(name, overflow="fold")


class ProgressView:
    QUIET = ("planned", "submitting", "refused", "ssh key")  # said on a terminal only (the live table)
    def __init__(self, verbose: bool = False):
        from rich.console import Console

        probe = Console(stderr=True)
        self.terminal = probe.is_terminal and not RECORDS_ON_TERMINAL  # --json: one line per event, no live table
        self.console = probe if self.terminal else Console(stderr=True, width=200, highlight=False)
        self.verbose = verbose
        self.runs: dict[str, RunLine] = {}
        self.holding_back: str | None = None
        self.pacing_now = lambda: self.holding_back  # the live table asks the request budget itself
        self._live = None
        self.started: dict[str, RunStarted] = {}  # per run, for the summary tables at the end
        self.finished: dict[str, RunFinished] = {}
        self.pricing = None  # outcome -> LaunchPlan.pricing(): the obtained rate against the one costs used

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.terminal and self._live is None:
            from rich.live import Live

            self._live = Live(get_renderable=self._table, console=self.console, refresh_per_second=4,
                              transient=True, redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    # --- events ----------------------------------------------------------------------------
    def add(self, run_id: str, gpu: str) -> None:
        self.runs[run_id] = RunLine(run_id=run_id, gpu=gpu)

    def update(self, run_id: str, **fields) -> None:
        run = self.runs[run_id]
        changed_status = "status" in fields and fields["status"] != run.status
        for key, value in fields.items():
            setattr(run, key, value)
        if changed_status and not self.terminal and run.status not in self.QUIET:
            where = f" on {run.obtained}" if run.obtained else ""
            self.say(run_id, f"{run.status}{where}")

    def say(self, run_id: str | None, message: str) -> None:
        prefix = f"[{run_id}] " if run_id else ""
        self.console.print(f"gpubench-launch: {prefix}{message}", markup=False, highlight=False, soft_wrap=True)

    def pacing(self, state: str | None) -> None:
        """The request budget is holding requests back (state), or no longer (None)."""
        if state != self.holding_back and not self.terminal:
            self.say(None, state or "API requests no longer held back")
        self.holding_back = state

    def line(self, run_id: str, text: str) -> None:
        run = self.runs[run_id]
        run.last_lines = (run.last_lines + [text])[-3:]
        if self.verbose:
            self.console.print(f"[{run_id}] {text}", markup=False, highlight=False, soft_wrap=True)

    def record(self, run_id: str, record) -> None:
        run = self.runs[run_id]
        if isinstance(record, RunStarted):
            self.started[run_id] = record
            run.setups_total = len(record.setups) * max(1, record.repeats)
            run.phase = "started"
        elif isinstance(record, Progress):
            run.phase = record.phase + (f" {record.setup}" if record.setup else "")
            if not self.terminal and self.verbose:
                self.say(run_id, f"phase {run.phase}")
        elif isinstance(record, SetupResult):
            run.setups_done += 1
            run.metrics = format_metrics(record.metrics)
            detail = run.metrics if record.status == "ok" else (record.error or "")[:120]
            if not self.terminal:
                self.say(run_id, f"setup {record.setup} #{record.repeat}: {record.status} {detail}".rstrip())
        elif isinstance(record, RunFinished):
            self.finished[run_id] = record
            run.phase = f"finished {record.status}"

    # --- rendering ---------------------------------------------------------------------------
    def _table(self):
        from rich.table import Table

        table = Table(title="gpubench-launch", expand=False, caption=self.pacing_now())
        add_columns(table, ("run", "GPU", "status", "phase", "setups", "latest", "cost $", "time"))
        for run in self.runs.values():
            elapsed = time.monotonic() - run.started
            table.add_row(
                run.run_id, run.obtained or run.gpu, run.status, run.phase,
                f"{run.setups_done}/{run.setups_total or '?'}", run.metrics or (run.last_lines[-1][:60] if
                                                                                 run.last_lines else ""),
                "" if run.cost_usd is None else f"{run.cost_usd:.4f}", f"{elapsed:.0f}s",
            )
        return table

    def summary(self, outcomes: list) -> None:
        from rich.table import Table

        self.stop()
        table = Table(title="gpubench-launch summary")
        add_columns(table, ("run", "GPU", "region", "job", "setups ok", "cost $", "time", "exit"))
        for o in outcomes:
            table.add_row(
                o.run_id, o.gpu or "-", o.region or "-", o.status, f"{o.setups_ok}/{o.setups_total}",
                "-" if o.cost_usd is None else f"{o.cost_usd:.4f}", f"{o.duration_s:.0f}s", str(o.exit_code),
            )
        self.console.print(table)
        for o in outcomes:
            if o.run_id in self.finished and o.run_id in self.started:
                self._study_table(o, self.started[o.run_id], self.finished[o.run_id])
        rows = [(o, s) for o in outcomes for s in o.setups if o.run_id not in self.finished]
        if rows:
            results = Table(title="results")
            add_columns(results, ("run", "setup", "status", "metrics (median)"))
            for o, s in rows:
                results.add_row(o.run_id, s["setup"], s["status"], s["metrics"])
            self.console.print(results)
        for o in outcomes:
            if o.stored:
                self.say(o.run_id, f"stored in {o.stored}")
            if o.message:
                self.say(o.run_id, o.message)


    def _study_table(self, outcome, started: RunStarted, finished: RunFinished) -> None:
        """gpubench's own end-of-run table (gpubench/results/summary.py) for one run: headline metrics with
        their spread, the speed-up against the baseline setup, peak memory and cost, and what the numbers are."""
        from rich.table import Table

        from gpubench.catalog import WORKLOADS
        from gpubench.results import summary

        spec = WORKLOADS.get(started.workload)
        # The launcher imports no workload code: the records' own metric order stands in for the workload's.
        header, rows = summary.table(spec, None, finished.summary)
        table = Table(title=f"{outcome.run_id} on {outcome.gpu or '?'}")
        for column in header:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        self.console.print(table)
        notes = summary.notes(started.smoke, bool(started.price_usd_per_hour), finished.summary)
        pricing = self.pricing(outcome) if self.pricing and started.price_usd_per_hour else None
        if pricing and pricing.get("note"):
            notes.append(pricing["note"])
        for note in notes:
            self.console.print(f"  {note}", markup=False, highlight=False, soft_wrap=True)


RECORDS_ON_TERMINAL = False  # --json: JSON Lines on stdout even when it is a terminal


def stdout_sink():
    """Where records are echoed: stdout when it is piped (JSON Lines for a program) or with --json, nowhere when
    it is a terminal (the live view shows them, the run folder keeps them)."""
    return sys.stdout if RECORDS_ON_TERMINAL or not sys.stdout.isatty() else _Discard()


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
