"""Turn another process's output (a container, a Runcrate job) into a local run folder.

`gpubench run` inside a container or on a rented GPU prints records on stdout. Whoever watches it
(the launcher, `gpubench run --docker`) feeds each line here: records land in results.jsonl exactly
as a local run writes them, every other line goes to run.log, so one folder layout serves all.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.schema import Derived, Progress, RunFinished, RunStarted, SetupResult, parse_record
from gpubench.stores import RunDir

AnyRecord = RunStarted | Progress | SetupResult | Derived | RunFinished


class LineAssembler:
    """Fragments of output in, whole lines out; the last unterminated fragment waits for its newline."""

    def __init__(self, on_line: Callable[[str], None]):
        self.on_line = on_line
        self._partial = ""
        self.lines = 0

    def feed(self, text: str) -> None:
        text = self._partial + text
        *lines, self._partial = text.split("\n")
        for line in lines:
            self.lines += 1
            self.on_line(line)

    def flush(self) -> None:
        if self._partial:
            line, self._partial = self._partial, ""
            self.lines += 1
            self.on_line(line)


class RecordStream:
    def __init__(self, run_dir: RunDir, on_record: Callable[[AnyRecord], None] | None = None):
        self.run_dir = run_dir
        self.on_record = on_record
        self.started: RunStarted | None = None
        self.results: list[SetupResult] = []
        self.finished: RunFinished | None = None
        self.lines = 0

    def feed(self, line: str) -> AnyRecord | None:
        """One line of output; returns the record it held, if any."""
        self.lines += 1
        line = line.rstrip("\r\n")
        try:
            record = parse_record(line)
        except ValueError as exc:  # a record of another schema major version: keep it, raw
            self.run_dir.log(f"[gpubench] {exc}: {line}")
            return None
        if record is None:
            self.run_dir.log(line)
            return None
        self.run_dir.record_line(line)
        if isinstance(record, RunStarted):
            self.started = record
        elif isinstance(record, SetupResult):
            self.results.append(record)
        elif isinstance(record, RunFinished):
            self.finished = record
        if self.on_record:
            self.on_record(record)
        return record

    @property
    def outcome(self) -> str:
        """ok | partial | failed | incomplete (no run_finished record arrived)."""
        if self.finished is None:
            return "incomplete"
        return self.finished.status
