"""What a sweep has already stored, read back from its store (an s3:// prefix) or, without one, the local
results folder: one Attempt per run folder under `<sweep id>/<workload>/<gpu>/<args key>/<run id>/`.

A cell is complete when one of its runs has a run_finished record whose status is ok or partial (the run got
to its end; a setup that ran out of memory is a measured fact, not a reason to pay again). Folders are
written by `stores.deliver` at the end of a run (locally, job.json is written last), so a run whose launcher
was killed has no job.json here: its job is found through the API instead (the sweep's job tags).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from gpubench.schema import RunFinished, parse_record
from gpubench.stores import S3Store, StoreError, _describe

COMPLETE = ("ok", "partial")
SUMMARY_FILE = "sweep.json"


@dataclass
class Attempt:
    cell_path: str  # <workload>/<gpu>/<args key>
    run_id: str
    finished: str | None = None  # the run_finished record's status, if any
    job_status: str | None = None
    started: bool = True  # whether the job ever got a machine
    error: str | None = None
    cost_usd: float = 0.0
    gpu_hours: float = 0.0  # a Slurm job's, as its job.json says
    ended: bool = False  # its job.json is there: the launcher saw the job end and stored the run

    @property
    def complete(self) -> bool:
        return self.finished in COMPLETE

    @property
    def no_capacity(self) -> bool:
        return not self.started and "capacity" in (self.error or "").lower()


class SweepStore:
    """The sweep's folder: an S3 prefix (`store`) or a local folder (`root`)."""

    def __init__(self, sweep_id: str, store: S3Store | None, results_dir: str):
        self.sweep_id = sweep_id
        self.s3 = store
        self.root = Path(results_dir) / sweep_id
        self._client = None

    @property
    def url(self) -> str:
        return f"{self.s3.url}/{self.sweep_id}" if self.s3 else str(self.root)

    def cell_store(self, cell_path: str) -> S3Store | None:
        if self.s3 is None:
            return None
        prefix = "/".join(p for p in (self.s3.prefix, self.sweep_id, cell_path) if p)
        return S3Store(bucket=self.s3.bucket, prefix=prefix)

    # --- reading ---------------------------------------------------------------------------------
    def attempts(self) -> list[Attempt]:
        """Every stored run of the sweep (StoreError when the store cannot be read)."""
        names = self._list()
        runs: dict[tuple[str, str], Attempt] = {}
        for name in names:
            parts = name.split("/")
            if len(parts) != 5 or parts[-1] not in ("results.jsonl", "job.json"):
                continue
            cell_path, run_id = "/".join(parts[:3]), parts[3]
            attempt = runs.setdefault((cell_path, run_id), Attempt(cell_path, run_id))
            text = self._read(name)
            if parts[-1] == "results.jsonl":
                attempt.finished = finished_status(text)
            else:
                _job_facts(attempt, text)
        return list(runs.values())

    def _list(self) -> list[str]:
        if self.s3 is None:
            if not self.root.is_dir():
                return []
            return sorted(str(p.relative_to(self.root)).replace(os.sep, "/") for p in self.root.rglob("*")
                          if p.is_file())
        prefix = "/".join(p for p in (self.s3.prefix, self.sweep_id) if p) + "/"
        names = []
        try:
            for page in self._s3().get_paginator("list_objects_v2").paginate(Bucket=self.s3.bucket, Prefix=prefix):
                names += [item["Key"][len(prefix):] for item in page.get("Contents", [])]
        except StoreError:
            raise
        except Exception as exc:  # botocore's many types all mean "cannot read"
            raise StoreError(f"cannot list {self.url}: {_describe(exc)}") from None
        return sorted(names)

    def _read(self, name: str) -> str:
        if self.s3 is None:
            return (self.root / name).read_text(encoding="utf-8", errors="replace")
        key = "/".join(p for p in (self.s3.prefix, self.sweep_id, name) if p)
        try:
            return self._s3().get_object(Bucket=self.s3.bucket, Key=key)["Body"].read().decode(errors="replace")
        except Exception as exc:
            raise StoreError(f"cannot read {self.s3.url}/{name}: {_describe(exc)}") from None

    def _s3(self):
        if self._client is None:
            self._client = self.s3.client()
        return self._client

    # --- the summary object ----------------------------------------------------------------------
    def write_summary(self, summary: dict) -> str:
        """sweep.json beside the cells, locally and in the store; where it went."""
        text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / SUMMARY_FILE).write_text(text)
        if self.s3 is None:
            return str(self.root / SUMMARY_FILE)
        key = "/".join(p for p in (self.s3.prefix, self.sweep_id, SUMMARY_FILE) if p)
        try:
            self._s3().put_object(Bucket=self.s3.bucket, Key=key, Body=text.encode(), ContentType="application/json")
        except Exception as exc:
            raise StoreError(f"cannot write {self.url}/{SUMMARY_FILE}: {_describe(exc)}") from None
        return f"{self.url}/{SUMMARY_FILE}"


def finished_status(text: str) -> str | None:
    status = None
    for line in text.splitlines():
        try:
            record = parse_record(line)
        except ValueError:
            continue
        if isinstance(record, RunFinished):
            status = record.status
    return status


def _job_facts(attempt: Attempt, text: str) -> None:
    try:
        facts = json.loads(text)
    except ValueError:
        return
    attempt.ended = True
    attempt.job_status = facts.get("status")
    attempt.started = facts.get("started_at") is not None
    attempt.error = facts.get("error")
    attempt.cost_usd = float(facts.get("cost_usd") or 0.0)
    attempt.gpu_hours = float(facts.get("gpu_hours") or 0.0)
