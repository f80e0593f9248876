"""Results recovered from a job's artifacts, when its log stream was lost for good.

`gpubench run` in a job writes its run folder under $RUNCRATE_OUTPUT_DIR, which Runcrate keeps as
the job's artifacts once the command ended (whatever its status). When the launcher could not read
the whole log (the follow kept failing, the log was truncated, or the launcher itself died and is
asked again with `gpubench-launch status RUN`), it downloads that results.jsonl and merges it with
what was streamed: every record once, none lost, and for each one where it came from ("stream",
"artifacts" or "both"), kept in job.json under `record_sources`.

Records are matched by content (the same JSON, whatever the spacing), so a record both streamed and
in the artifact counts once; repeats of the very same record are matched one for one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpubench.schema import parse_record
from gpubench.stores import RECORDS_FILE

from ..redact import Redactor
from .client import api_errors, describe


def record_key(line: str) -> str | None:
    """The record's content, spacing aside; None for a line that is not a gpubench record."""
    try:
        if parse_record(line) is None:
            return None
    except ValueError:
        pass  # another schema version: still a record, matched as it is
    try:
        return json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return None


def results_path(listing: list, run_id: str) -> str | None:
    """Which artifact is the run's results.jsonl: `.../<run_id>/results.jsonl`, else the only one."""
    paths = [a.path for a in listing if a.path.rsplit("/", 1)[-1] == RECORDS_FILE]
    own = [p for p in paths if p.split("/")[-2:-1] == [run_id]]
    if own:
        return own[0]
    return paths[0] if len(paths) == 1 else None


async def fetch_records(client, job_id: str, run_id: str, redact: Redactor,
                        listing: list | None = None) -> tuple[list[str] | None, str]:
    """The record lines of the job's results.jsonl artifact, and a word on where they came from
    (or why there are none: None lines)."""
    try:
        if listing is None:
            listing = await client.jobs.artifacts.list(job_id)
        path = results_path(listing, run_id)
        if path is None:
            return None, "the job's artifacts hold no results.jsonl"
        data = await client.jobs.artifacts.download(job_id, path)
    except api_errors() as exc:
        return None, f"cannot read the job's artifacts: {describe(exc, redact)}"
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else Path(data).read_text()
    return [redact(line) for line in text.splitlines() if record_key(line) is not None], path


def merge(streamed: list[str], recovered: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The recovered lines that were not streamed (in their order), and where every record came from."""
    left = Counter(k for k in map(record_key, streamed) if k is not None)
    sources = []
    missing = []
    for line in recovered:
        key = record_key(line)
        if left[key] > 0:
            left[key] -= 1
            sources.append(_source(line, "both"))
        else:
            missing.append(line)
            sources.append(_source(line, "artifacts"))
    in_artifact = Counter(record_key(line) for line in recovered)
    for line in streamed:  # streamed but not (or not as often) in the artifact
        key = record_key(line)
        if key is None:
            continue
        if in_artifact[key] > 0:
            in_artifact[key] -= 1
        else:
            sources.append(_source(line, "stream"))
    return missing, sources


def _source(line: str, source: str) -> dict[str, Any]:
    record = json.loads(line)
    out = {"kind": record.get("kind"), "source": source}
    for name in ("setup", "repeat", "phase", "ts"):
        if record.get(name) is not None:
            out[name] = record[name]
    return out


def counts(sources: list[dict[str, Any]]) -> dict[str, int]:
    tally = Counter(s["source"] for s in sources)
    return {name: tally.get(name, 0) for name in ("stream", "artifacts", "both")}


def describe_counts(tally: dict[str, int]) -> str:
    return (f"records: {tally['both'] + tally['stream']} streamed, {tally['artifacts']} recovered from the job's "
            f"artifacts ({tally['both']} in both)")


def streamed_lines(folder: Path) -> list[str]:
    path = folder / RECORDS_FILE
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


async def recover_into(client, job_id: str, run_id: str, folder: Path, feed: Callable[[str], Any],
                       redact: Redactor, listing: list | None = None) -> dict[str, Any]:
    """Merge the artifact's records into a run folder; `feed` takes each missing line (a live run's
    RunFolder.feed, or an append to results.jsonl after a crash). Returns the facts for job.json."""
    recovered, where = await fetch_records(client, job_id, run_id, redact, listing)
    if recovered is None:
        return {"recovered_from": None, "recovery_error": where}
    missing, sources = merge(streamed_lines(folder), recovered)
    for line in missing:
        feed(line)
    return {"recovered_from": where, "record_counts": counts(sources), "record_sources": sources}


def append_to(folder: Path) -> Callable[[str], None]:
    """A feed for a folder no launcher is writing any more (resumed after a crash)."""
    folder.mkdir(parents=True, exist_ok=True)

    def feed(line: str) -> None:
        with open(folder / RECORDS_FILE, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    return feed


async def resume_folder(client, job, run_id: str, results_dir: str, redact: Redactor) -> str | None:
    """After the launcher died: merge a finished job's artifact records into its local run folder
    (made if missing) and note where each came from in job.json; one line for the user, or None."""
    if not job.finished:
        return None
    folder = Path(results_dir) / run_id
    facts = await recover_into(client, job.id, run_id, folder, append_to(folder), redact)
    if facts.get("recovered_from") is None:
        return f"not recovered from artifacts: {facts['recovery_error']}"
    path = folder / "job.json"
    try:
        known = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        known = {}
    known.update({"run_id": run_id, "via": "job", "job_id": job.id, "status": job.status, **facts})
    path.write_text(redact(json.dumps(known, indent=2, sort_keys=True, default=str)) + "\n")
    return f"{describe_counts(facts['record_counts'])}; merged into {folder}"
