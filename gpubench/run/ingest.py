"""Turn another process's output (a container, a Runcrate job) into a local run folder.

`gpubench run` inside a container or on a rented GPU prints records on stdout. Whoever watches it
(the launcher, `gpubench run --docker`) feeds each line here: records land in results.jsonl exactly
as a local run writes them, every other line goes to run.log, so one folder layout serves all.

The output may be stdout and stderr combined (a Runcrate job's log is), so a record need not stand on
a line of its own: text without a newline (a progress bar's "\r") may come before it, stderr text may
come between it and its newline (an unbuffered stdout writes the newline apart), and a stderr line
read between two halves of a long record splits it in two. All are put right here: a record
always starts with RECORD_START, which no other part of a record can hold (strings in JSON escape
their quotes), and a record cut once is found again by joining its first part to a later line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from gpubench.schema import Derived, Progress, RunFinished, RunStarted, SetupResult, parse_record
from gpubench.stores import RunDir

AnyRecord = RunStarted | Progress | SetupResult | Derived | RunFinished
RECORD_START = '{"schema_version":'  # how schema.to_line begins every record
MEND_WITHIN_LINES = 20  # a cut record's second part is looked for this many lines on
_DECODER = json.JSONDecoder()


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
        self._cut: tuple[str, int] | None = None  # a record's first part, and the lines read since

    def feed(self, line: str) -> AnyRecord | None:
        """One line of output; returns the record it held, if any."""
        self.lines += 1
        line = line.rstrip("\r\n")
        start = line.find(RECORD_START)
        if start > 0:  # text without its newline, then a record: the text is the log's
            self.run_dir.log(line[:start])
            line = line[start:]
        try:
            record = parse_record(line)
        except ValueError as exc:  # a record of another schema major version: keep it, raw
            self.run_dir.log(f"[gpubench] {exc}: {line}")
            return None
        if record is None:
            record, line = self._split_off(line)
        if record is None:
            record, line = self._mend(line)
        if record is None:
            self.run_dir.log(line)
            return None
        self._cut = None
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

    def _split_off(self, line: str) -> tuple[AnyRecord | None, str]:
        """A whole record with other output after it on its line (written before the record's newline,
        which an unbuffered stdout writes apart): the record, and the rest goes to the log."""
        if not line.startswith(RECORD_START):
            return None, line
        try:
            _, end = _DECODER.raw_decode(line)
        except ValueError:
            return None, line
        record = parse_record(line[:end])
        if record is None:
            return None, line
        self.run_dir.log(line[end:])
        return record, line[:end]

    def _mend(self, line: str) -> tuple[AnyRecord | None, str]:
        """(the record, its text) when `line` ends a record cut by other output, else (None, line).

        The cut record's first part ends where the other output began: the longest head of it that
        makes a valid record with this line wins (other output inside a string stays in that string,
        the numbers are kept)."""
        cut, self._cut = self._cut, None
        if line.startswith(RECORD_START):
            self._cut = (line, 0)  # a record start that did not parse: perhaps cut, wait for its end
        elif cut is not None and cut[1] < MEND_WITHIN_LINES:
            head, seen = cut
            if line.endswith("}"):
                for end in range(len(head), len(RECORD_START), -1):
                    candidate = head[:end] + line
                    try:
                        json.loads(candidate)
                    except ValueError:
                        continue
                    record = parse_record(candidate)
                    if record is not None:
                        self.run_dir.log(f"[gpubench] a record was cut by other output; joined: {head[end:]!r}")
                        return record, candidate
            self._cut = (head, seen + 1)
        return None, line

    @property
    def outcome(self) -> str:
        """ok | partial | failed | incomplete (no run_finished record arrived)."""
        if self.finished is None:
            return "incomplete"
        return self.finished.status
