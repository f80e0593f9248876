"""Reading stored runs back: a run folder's results.jsonl as typed records, complete or not.

A run that never wrote `run_finished` (killed, or still going) is `partial`: its result rows are
still read and summarised, and every reader says so rather than dropping it. A line that is no readable record
(cut short, edited, a NaN) is skipped and kept in the run's `skipped`, with why; every reader (report, compare,
site, recommend) says those lines with `skipped_lines`, so a GPU whose results were all skipped never just vanishes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpubench.schema import (
    Derived,
    RunFinished,
    RunStarted,
    SetupResult,
    SetupSummary,
    parse_record,
    summarize_results,
    unreadable,
)
from gpubench.stores import RECORDS_FILE

SKIPPED_SHOWN = 10  # skipped lines named per run; the rest are counted


class StoredRunError(ValueError):
    """A path that holds no readable run; str() is one line."""


@dataclass
class Skipped:
    """A line of a stored run that was not read, and why."""

    where: str  # "<file>:<line>"
    why: str


@dataclass
class StoredRun:
    path: Path
    started: RunStarted
    results: list[SetupResult] = field(default_factory=list)
    finished: RunFinished | None = None
    skipped: list[Skipped] = field(default_factory=list)  # lines that looked like records but are not

    @property
    def partial(self) -> bool:
        return self.finished is None

    @property
    def workload(self) -> str:
        return self.started.workload

    @property
    def price_usd_per_hour(self) -> float | None:
        """The hourly price the run's costs use: the one place every reader takes it from (run_started's, 1.4; a
        record before 1.4 kept it in its environment block, and reads the same: schema.upgraded)."""
        return self.started.price_usd_per_hour

    @property
    def gpu(self) -> str:
        gpus = self.started.environment.gpus
        return gpus[0].name if gpus else "cpu"

    def directions(self) -> dict[str, str | None]:
        """Each metric's better direction, as its result rows carry it."""
        return {name: m.better for r in self.results for name, m in r.metrics.items()}

    def summary(self) -> list[SetupSummary]:
        """The run's own summary when it finished; otherwise one made from the rows it has."""
        if self.finished is not None:
            return self.finished.summary
        return summarize_results(self.started.setups, self.results)


def discover(paths: list[str], on_progress=None) -> list[StoredRun]:
    """Every run under the given paths: run folders, folders holding them at any depth, or s3://bucket/prefix.

    A run kept twice (its run folder, and the records a job's stdout captured beside it) is read once: the
    copy that finished wins over a partial one.
    """
    runs: dict[str, StoredRun] = {}
    for given in paths:
        folders = _fetch_s3(given) if given.startswith("s3://") else _run_folders(Path(given))
        if not folders:
            raise StoredRunError(f"{given}: no gpubench runs there (no {RECORDS_FILE})")
        for index, folder in enumerate(folders, 1):
            run = load(folder)
            kept = runs.get(run.started.run_id)
            if kept is None or (kept.partial and not run.partial):
                runs[run.started.run_id] = run
            if on_progress:
                on_progress(given, index, len(folders))
    return list(runs.values())


def _run_folders(path: Path) -> list[Path]:
    if (path / RECORDS_FILE).is_file() or path.is_file():
        return [path]
    if not path.is_dir():
        raise StoredRunError(f"{path}: no such folder")
    # An empty results.jsonl is a launch that never ran (a job with no GPU): kept by the launcher, not a run.
    return sorted(p.parent for p in path.rglob(RECORDS_FILE) if p.stat().st_size)


def _fetch_s3(url: str) -> list[Path]:
    """Each run's records under an s3:// prefix, copied to a temporary folder (the report reads only those)."""
    import tempfile

    from gpubench.stores import StoreError, parse_store

    store = parse_store(url)
    client = store.client()
    root = Path(tempfile.mkdtemp(prefix="gpubench-report-"))
    folders = []
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=store.prefix)
        keys = [obj["Key"] for page in pages for obj in page.get("Contents", []) if obj["Key"].endswith(
            "/" + RECORDS_FILE) and obj.get("Size", 1)]
        for key in sorted(keys):
            folder = root / key.rsplit("/", 2)[-2]
            folder.mkdir(exist_ok=True)
            client.download_file(store.bucket, key, str(folder / RECORDS_FILE))
            folders.append(folder)
    except StoreError:
        raise
    except Exception as exc:  # botocore's many types all mean "cannot read the store"
        raise StoredRunError(f"cannot read {url}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    return folders


def load(path: str | Path) -> StoredRun:
    path = Path(path)
    records_file = path / RECORDS_FILE if path.is_dir() else path
    try:
        # utf-8-sig: a byte-order mark (an editor's, Windows tools') before the first record is no damage
        lines = records_file.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise StoredRunError(f"{path}: not a gpubench run ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise StoredRunError(f"{records_file}: not UTF-8 text (byte {exc.start}), so not gpubench records") from None
    return from_lines(path, lines, records_file)


def from_lines(path: Path, lines: list[str], records_file: Path | str = "") -> StoredRun:
    """A run from its record lines, `path` being where it is said to live. Other lines are skipped: in a records
    file every line is a record, so one that is not is damaged and kept in `skipped` with why; elsewhere (a job's
    captured output) only a line that looks like one (a JSON object) is."""
    started, finished, results, skipped, at = None, None, {}, [], {}
    only_records = Path(records_file).name == RECORDS_FILE
    for number, line in enumerate(lines, 1):
        try:
            record = parse_record(line)
        except ValueError as exc:  # another schema major version
            raise StoredRunError(f"{records_file}:{number}: {exc}") from None
        if record is None and line.strip() and (only_records or line.lstrip().startswith("{")):
            why = unreadable(line) if line.lstrip().startswith("{") else "not a JSON record"
            skipped.append(Skipped(f"{records_file}:{number}", why))
        if isinstance(record, RunStarted):
            started = record
        elif isinstance(record, SetupResult):
            key = (record.setup, record.repeat)
            if key in results:  # written twice (a resumed copy, an edit): the later one is read, and that is said
                why = f"{record.setup} repeat {record.repeat} is recorded again on line {number}, which is read"
                skipped.append(Skipped(f"{records_file}:{at[key]}", why))
            results[key], at[key] = record, number
        elif isinstance(record, Derived):
            row = results.get((record.setup, record.repeat))
            if row is not None:
                row.metrics.update(record.metrics)
        elif isinstance(record, RunFinished):
            finished = record
    if started is None:
        raise StoredRunError(f"{records_file}: no run_started record, so not a gpubench run")
    return StoredRun(path=path, started=started, results=list(results.values()), finished=finished, skipped=skipped)


def skipped_lines(runs: list[StoredRun]) -> list[str]:
    """What reading `runs` skipped, for every reader to say the same way: a count, then each line with why (the
    first SKIPPED_SHOWN of a run, the rest counted); [] when nothing was."""
    damaged = [run for run in runs if run.skipped]
    if not damaged:
        return []
    total = sum(len(run.skipped) for run in damaged)
    out = [f"skipped {total} line{'s' * (total != 1)} of {len(damaged)} stored run{'s' * (len(damaged) != 1)}"
           " (the rest of each run is read):"]
    for run in damaged:
        out += [f"  {s.where}: {s.why}" for s in run.skipped[:SKIPPED_SHOWN]]
        if len(run.skipped) > SKIPPED_SHOWN:
            out.append(f"  ... and {len(run.skipped) - SKIPPED_SHOWN} more lines of {run.path}")
    return out
