"""A run's local folder (results.jsonl, run.log, config.json, job.json), its upload, and its outcome."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gpubench.run.ingest import RecordStream
from gpubench.stores import RunDir, S3Store, deliver

from . import errors
from .progress import ProgressView, format_metrics, stdout_sink
from .redact import Redactor

JOB_FILE = "job.json"
FOLDER_DEPTH = 5  # a sweep's runs are <results>/<sweep id>/<workload>/<gpu>/<args key>/<run id>


def find_run_folder(results_dir: str, run_id: str) -> Path | None:
    """A run's folder under a results folder: a launch's (<results>/<run id>) or a sweep cell's."""
    root = Path(results_dir)
    for depth in range(FOLDER_DEPTH):
        for path in root.glob("*/" * depth + run_id):
            if path.is_dir():
                return path
    return None


@dataclass
class RunOutcome:
    run_id: str
    exit_code: int
    status: str  # the job's (or instance command's) final status, or what stopped it
    gpu: str | None = None
    region: str | None = None
    cost_usd: float | None = None
    duration_s: float = 0.0
    setups_ok: int = 0
    setups_total: int = 0
    stored: str | None = None
    message: str = ""
    launched: bool = True
    setups: list[dict[str, str]] = field(default_factory=list)


class RunFolder:
    def __init__(self, results_dir: str, run_id: str, config: dict[str, Any], view: ProgressView,
                 redact: Redactor, mirror: bool = False):
        """mirror: the job writes this folder itself (a Slurm job, on the shared filesystem); the launcher's
        reading of its output only echoes the records and drives the view, and adds job.json at the end."""
        self.run_id = run_id
        self.view = view
        self.redact = redact
        if mirror:
            self.dir = MirrorDir(Path(results_dir) / run_id, stdout_sink())
        else:
            self.dir = RunDir.create(results_dir, run_id, echo=stdout_sink())
            self.dir.write_config(config)
        self.stream = RecordStream(self.dir, on_record=lambda record: view.record(run_id, record))
        self.text: deque[str] = deque(maxlen=50)  # the last lines that were not records: where a failure says why
        self._closed = False

    @property
    def path(self):
        return self.dir.path

    def feed(self, line: str):
        """One line of the job's output: a record (results.jsonl, stdout, the view) or text (run.log)."""
        line = self.redact(line)
        record = self.stream.feed(line)
        if record is None:
            self.view.line(self.run_id, line)
            if line.strip():
                self.text.append(line.strip())
        return record

    def error_line(self, skip=None) -> str | None:
        """The job's own reason for failing, whole (failure_reason); `skip` leaves out a platform's own lines."""
        return failure_reason(self.stream.results, self.text, skip)

    def write_facts(self, facts: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)  # a mirrored job that never started has no folder
        text = json.dumps(facts, indent=2, sort_keys=True, default=str)
        (self.path / JOB_FILE).write_text(self.redact(text) + "\n")

    def discard(self) -> None:
        """Nothing was launched: leave no folder behind."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def close(self) -> None:
        if not self._closed:
            self.dir.close()
            self._closed = True

    async def store(self, store: S3Store | None) -> tuple[str, bool]:
        """Close the folder and upload it; (where it is, whether that worked)."""
        self.close()
        if store is None:
            return str(self.path), True
        ok, message = await asyncio.to_thread(deliver, self.path, store)
        if not ok:
            self.view.say(self.run_id, self.redact(message))
            return str(self.path), False
        return f"{store.url}/{self.run_id}/", True

    # --- what the records say ------------------------------------------------------------
    def records_code(self) -> int:
        """gpubench run's rule (exit_codes.OK): 0 when a run_finished record said ok, every result is ok or
        skipped for a stated reason, and at least one is ok; 1 otherwise."""
        stream = self.stream
        if stream.finished is None or stream.finished.status != "ok" or not stream.results:
            return errors.SETUPS_NOT_OK
        if any(r.status not in ("ok", "skipped") for r in stream.results):
            return errors.SETUPS_NOT_OK
        if not any(r.status == "ok" for r in stream.results):
            return errors.SETUPS_NOT_OK
        return errors.OK

    def setup_rows(self) -> list[dict[str, str]]:
        stream = self.stream
        rows, summarized = [], set()
        if stream.finished is not None:
            for s in stream.finished.summary:
                summarized.add(s.setup)
                rows.append({"setup": s.setup, "status": s.status, "metrics": format_metrics(s.metrics, limit=3)})
        for r in stream.results:
            if r.setup not in summarized:  # repeats without a summary, or the launcher's own records
                detail = format_metrics(r.metrics, limit=4) if r.status == "ok" else (r.error or "")[:120]
                rows.append({"setup": f"{r.setup} #{r.repeat}", "status": r.status, "metrics": detail})
        return rows

    def setup_counts(self) -> tuple[int, int]:
        stream = self.stream
        if stream.finished is not None:
            summary = stream.finished.summary
            return sum(s.status == "ok" for s in summary), len(summary)
        total = len(stream.started.setups) if stream.started else len({r.setup for r in stream.results})
        ok = len({r.setup for r in stream.results if r.status == "ok"})
        return ok, total


def failure_reason(results, text, skip=None) -> str | None:
    """Why a job failed, in its own words and whole: its failed setups' errors from the record stream (a setup
    that raised: `eager-sdpa: AssertionError: Torch not compiled with CUDA enabled`), else gpubench's `error:`
    line, else the last error-like line of its text (a traceback's last line), else its last line. `skip` drops a
    platform's own lines, which come last and never say why (srun's `task 0: Exited with exit code 1`)."""
    failed: dict[str, list[str]] = {}
    for r in results:
        if r.status in ("error", "oom") and r.error and r.setup not in failed.setdefault(r.error, []):
            failed[r.error].append(r.setup)
    if failed:
        return "; ".join(f"{', '.join(setups)}: {error}" for error, setups in failed.items())
    lines = [ln for ln in text if not (skip and skip(ln))]
    for pick in (lambda ln: "gpubench: error:" in ln, lambda ln: "error" in ln.lower(), lambda ln: True):
        found = [ln for ln in lines if pick(ln)]
        if found:
            return found[-1]
    return None


class MirrorDir:
    """RunDir's side the record stream uses, for a folder its job writes itself: records are echoed (stdout when
    piped), nothing is written (results.jsonl and run.log are the job's own)."""

    def __init__(self, path: Path, echo: IO[str]):
        self.path = path
        self._echo = echo

    def record_line(self, line: str) -> None:
        self._echo.write(line + "\n")
        self._echo.flush()

    def log(self, line: str) -> None:
        pass

    def close(self) -> None:
        pass
