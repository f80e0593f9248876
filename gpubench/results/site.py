"""`gpubench site`: stored runs as a static site that opens with no network, rebuilt incrementally.

Pages: `index.html` (every study: runs, GPUs, latest run, changes flagged) and `<workload>.html` per study: the
latest table per series (the latest run of each GPU, config and hourly price: report.py's table, so spread,
cost at the run's own price, the post's number and share of peak), a history plot per series of each headline
metric over time, the changes beyond noise of each run against the previous run of its series (compare.py's
rule), and every run with links to its config, environment and raw records (copied under `runs/<run-id>/`).

Incremental: `manifest.json` keeps each stored copy's stamp (file mtime and size, or the S3 ETag) and run id,
and each page's input hash; `data/<workload>.json` keeps what each run contributed (its records without the
progress lines). A rebuild reads only copies whose stamp changed, re-renders only the studies they touch and
the index, and a plot only when its inputs changed (plots are named by the hash of their inputs).
"""

from __future__ import annotations

import atexit
import hashlib
import html
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

from gpubench.registry import UnknownName
from gpubench.results import compare, report, stored_runs, studies
from gpubench.results.summary import fmt
from gpubench.schema import COST_ROLE, ENERGY_PER_UNIT_ROLE, PEAK_MEMORY_ROLE, VALUE_ROLE, to_line
from gpubench.stores import RECORDS_FILE

SITE_VERSION = "3"  # a site built by another version is rebuilt whole (3: figures beside the GPUs, series labels
# without default fields, single-run changes folded)
MANIFEST = "manifest.json"
CONFIG_FILE = "config.json"
FLAGGED = ("worse", "better", compare.NO_SPREAD)
NUMBER = re.compile(r"^[-+]?[\d.,]+( |%|x|$)")  # a cell that reads as a number is right-aligned


class SiteError(ValueError):
    """Bad input for the site (a source, the output folder); str() is one line."""


@dataclass
class Source:
    """One stored copy of a run's records: where it is, its version, and how to get it as a local folder."""

    key: str
    stamp: str
    fetch: Callable[[], Path]


@dataclass
class Built:
    read: list[str] = field(default_factory=list)  # the source keys whose records were read
    rendered: list[str] = field(default_factory=list)  # the pages written
    plots: list[str] = field(default_factory=list)  # the plots drawn
    runs: list[stored_runs.StoredRun] = field(default_factory=list)  # the runs read (stored_runs.skipped_lines)


def build(sources: list[str], out: Path) -> Built:
    """Build or update the site in `out` from the runs under `sources` (folders or s3:// prefixes)."""
    inside = str(out.resolve()) + os.sep  # the site's own copies of runs are no source of runs
    listing = {s.key: s for given in sources for s in list_sources(given) if not s.key.startswith(inside)}
    manifest = _manifest(out)
    known: dict[str, dict] = manifest["runs"]
    changed = [key for key, s in listing.items() if known.get(key, {}).get("stamp") != s.stamp]
    gone = [key for key in known if key not in listing]
    # a run id kept in several copies: when the copy it was read from goes, read another one
    lost = {known[key]["run_id"] for key in gone}
    changed += [key for key in listing if key not in changed and known.get(key, {}).get("run_id") in lost]

    built = Built()
    fresh: dict[str, tuple[Source, Path, stored_runs.StoredRun]] = {}
    for key in changed:
        folder = listing[key].fetch()
        run = stored_runs.load(folder)
        built.read.append(key)
        built.runs.append(run)
        try:
            studies.spec_of(run.workload)
        except UnknownName as exc:
            raise SiteError(f"{key}: {exc}") from None
        fresh[key] = (listing[key], folder, run)

    # nothing is written before this point: bad input leaves the output folder as it was
    out.mkdir(parents=True, exist_ok=True)
    touched = {known[key]["workload"] for key in gone + changed if key in known}
    touched |= {run.workload for _, _, run in fresh.values()}
    for workload in sorted(touched):
        kept = _cache(out, workload)
        for run_id, entry in list(kept.items()):
            if entry["source"] in gone or entry["source"] in fresh:
                del kept[run_id]
        for key, (source, folder, run) in fresh.items():
            if run.workload != workload:
                continue
            held = kept.get(run.started.run_id)
            if held and held["finished"] and run.partial:
                continue  # another copy of this run finished: that one counts
            kept[run.started.run_id] = {"source": key, "stamp": source.stamp, "finished": not run.partial,
                                        "records": _slim(run)}
            _copy_run(out, folder, run)
        for run_id in {known[k]["run_id"] for k in gone if known[k]["workload"] == workload} - set(kept):
            shutil.rmtree(out / "runs" / _safe(run_id), ignore_errors=True)
        _write(out / "data" / f"{workload}.json", json.dumps(kept, sort_keys=True))
        inputs = _hash(SITE_VERSION, sorted((run_id, e["stamp"]) for run_id, e in kept.items()))
        previous = manifest["pages"].get(workload, {})
        if previous.get("hash") == inputs and (out / f"{workload}.html").is_file():
            continue
        if not kept:
            (out / f"{workload}.html").unlink(missing_ok=True)
            manifest["pages"].pop(workload, None)
            manifest["studies"].pop(workload, None)
        else:
            text, plots, summary = StudyPage(workload, kept).render(out, built)
            _write(out / f"{workload}.html", text)
            built.rendered.append(f"{workload}.html")
            manifest["pages"][workload] = {"hash": inputs, "plots": plots}
            manifest["studies"][workload] = summary
        for stale in set(previous.get("plots", [])) - set(manifest["pages"].get(workload, {}).get("plots", [])):
            (out / stale).unlink(missing_ok=True)

    for key in gone:
        known.pop(key)
    for key, (source, _, run) in fresh.items():
        known[key] = {"stamp": source.stamp, "run_id": run.started.run_id, "workload": run.workload}
    index = _hash(SITE_VERSION, manifest["studies"])
    if manifest["pages"].get("index", {}).get("hash") != index or not (out / "index.html").is_file():
        _write(out / "site.css", resources.files("gpubench").joinpath("data/site.css").read_text())
        _write(out / "index.html", _index(manifest["studies"]))
        built.rendered.append("index.html")
        manifest["pages"]["index"] = {"hash": index}
    _write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    return built


def check_out(out: Path) -> None:
    """Refuse an output folder that cannot be written or holds something other than a site, before any work."""
    if out.exists() and not out.is_dir():
        raise SiteError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise SiteError(f"--out {out}: not empty and not a gpubench site (no {MANIFEST}); choose a new folder")
    existing = next(p for p in [out, *out.parents] if p.exists())
    try:  # a real write (the file goes at once): permission bits say nothing to root or of a read-only mount
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise SiteError(f"--out {out}: {existing} is not writable ({exc.strerror or exc})") from None


def list_sources(given: str) -> list[Source]:
    """Every run's records under a folder or an s3:// prefix, with a stamp that changes when they do."""
    if given.startswith("s3://"):
        return _s3_sources(given)
    sources = []
    for folder in stored_runs._run_folders(Path(given)):
        records = folder / RECORDS_FILE if folder.is_dir() else folder
        info = records.stat()
        sources.append(Source(str(records.resolve()), f"{info.st_mtime_ns}:{info.st_size}",
                              lambda folder=folder: folder))
    if not sources:
        raise SiteError(f"{given}: no gpubench runs there (no {RECORDS_FILE})")
    return sources


def _s3_sources(url: str) -> list[Source]:
    from gpubench.stores import StoreError, parse_store

    store = parse_store(url)
    try:
        client = store.client()
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix=store.prefix)
        objects = {obj["Key"]: obj["ETag"] for page in pages for obj in page.get("Contents", [])}
    except StoreError:
        raise
    except Exception as exc:  # botocore's many types all mean "cannot read the store"
        raise SiteError(f"cannot read {url}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None

    def fetch(key: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="gpubench-site-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        for name in (RECORDS_FILE, CONFIG_FILE):
            sibling = key.rsplit("/", 1)[0] + "/" + name
            if sibling in objects:
                client.download_file(store.bucket, sibling, str(folder / name))
        return folder

    sources = [Source(f"s3://{store.bucket}/{key}", etag, lambda key=key: fetch(key))
               for key, etag in sorted(objects.items()) if key.endswith("/" + RECORDS_FILE)]
    if not sources:
        raise SiteError(f"{url}: no gpubench runs there (no {RECORDS_FILE})")
    return sources


def _manifest(out: Path) -> dict:
    empty = {"version": SITE_VERSION, "runs": {}, "pages": {}, "studies": {}}
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return empty
    return manifest if manifest.get("version") == SITE_VERSION else empty


def _cache(out: Path, workload: str) -> dict[str, dict]:
    try:
        return json.loads((out / "data" / f"{workload}.json").read_text())
    except (OSError, ValueError):
        return {}


def _slim(run: stored_runs.StoredRun) -> list[str]:
    """What a run contributes to the site: its records without the progress lines (derived ones merged)."""
    return [to_line(run.started), *(to_line(r) for r in run.results), *([to_line(run.finished)] if run.finished
                                                                          else [])]


def _copy_run(out: Path, folder: Path, run: stored_runs.StoredRun) -> None:
    """The run's raw records, config and environment, for the pages to link to."""
    target = out / "runs" / _safe(run.started.run_id)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / RECORDS_FILE if folder.is_dir() else folder, target / RECORDS_FILE)
    if folder.is_dir() and (folder / CONFIG_FILE).is_file():
        shutil.copyfile(folder / CONFIG_FILE, target / CONFIG_FILE)
    else:  # a run kept as records only: what ran, from its run_started record
        started = run.started.model_dump(include={"workload", "study", "setups", "repeats", "smoke", "config"})
        _write(target / CONFIG_FILE, json.dumps(started, indent=1))
    _write(target / "environment.json", run.started.environment.model_dump_json(indent=1))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _hash(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _when(run: stored_runs.StoredRun) -> datetime:
    return datetime.fromisoformat(run.started.ts.replace("Z", "+00:00"))


@dataclass
class Series:
    """The runs of one GPU, config and hourly price, oldest first: one line of history, one row group of the table."""

    label: str
    runs: list[stored_runs.StoredRun]
    changes: list[tuple[stored_runs.StoredRun, list[compare.Row]]]  # per run after the first: its flagged rows


class StudyPage:
    """One study's page, from what its runs contributed."""

    def __init__(self, workload: str, kept: dict[str, dict]):
        self.runs = sorted((stored_runs.from_lines(Path(run_id), entry["records"]) for run_id, entry in kept.items()),
                           key=_when)
        self.spec = studies.spec_of(workload, self.runs)

    def variants(self) -> dict[int, str]:
        """Each run's differing config fields, among runs of its kind: smoke runs differ from full ones anyway."""
        return {**report.config_variants([r for r in self.runs if not r.started.smoke]),
                **report.config_variants([r for r in self.runs if r.started.smoke])}

    def series(self) -> list[Series]:
        variant = self.variants()
        groups: dict[tuple, list[stored_runs.StoredRun]] = {}
        for run in self.runs:
            groups.setdefault((run.gpu, variant[id(run)], run.price_usd_per_hour or 0, run.started.smoke), []
                              ).append(run)
        prices = {}
        for gpu, config, price, _ in groups:
            prices.setdefault((gpu, config), set()).add(price)
        out = []
        for (gpu, config, price, smoke), runs in sorted(groups.items()):
            parts = [config] + ([f"${price:g}/h" if price else "no price"] if len(prices[(gpu, config)]) > 1 else [])
            parts += ["smoke"] if smoke else []
            label = f"{gpu} ({', '.join(p for p in parts if p)})" if any(parts) else gpu
            changes = [(run, [row for row in compare.compare(before, run) if row.verdict in FLAGGED])
                       for before, run in zip(runs, runs[1:], strict=False)]
            out.append(Series(label, runs, changes))
        return out

    def _serving_curve(self, out: Path, table: report.WorkloadReport, built: Built) -> str | None:
        """The latest runs' tokens/s per GPU against tokens/s per user (report_html's curve, the target marked),
        drawn when its points changed; None with fewer than two points (the table holds the one)."""
        from gpubench.results import report_html

        rows = report_html.serving_rows(table)
        if len(rows) < 2:
            return None
        points = [(r.label, r.setup, *(r.metrics[m].median if m in r.metrics else None for m in (
            report_html.SERVING_X, report_html.SERVING_Y, "slo_met"))) for r in rows]
        name = f"plots/{self.spec.name}-curve-{_hash(points, [t.describe() for t in table.targets])}.png"
        if not (out / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(report_html.serving_curve_png(table))
            built.plots.append(name)
        return name

    def render(self, out: Path, built: Built) -> tuple[str, list[str], dict]:
        spec = self.spec
        series = self.series()
        variant = self.variants()
        latest = [s.runs[-1] for s in series]
        table = report.workload_report(spec, latest, {id(run): variant[id(run)] for run in latest})
        header, rows = report.table(table)
        parts = [_head(f"{spec.name}: {spec.title}"),
                 "<p><a href='index.html'>all studies</a></p>",
                 f"<h1>{html.escape(spec.name)}: {html.escape(spec.title)}</h1>",
                 f"<p class='study'>Study: {html.escape(spec.study)}</p>",
                 "<h2>Latest run per GPU, config and price</h2>",
                 _table(header, rows, whole=_whole_reasons(header, table.rows))]
        if report.target_line(table):
            parts.append(f"<p>{html.escape(report.target_line(table))}</p>")
        if any(row.smoke for row in table.rows):
            parts.append(f"<p class='smoke'>{html.escape(report.SMOKE_NOTE)}</p>")
        parts += [f"<p>{html.escape(line)}</p>" for line in report.standing_lines(table)]
        from gpubench.results import recommend

        decision = recommend.decide(spec, self.runs)
        if decision:
            parts.append(f"<p class='decide'>Which GPU (gpubench recommend, stored prices): {html.escape(decision)}"
                         "</p>")
        metrics = history_metrics(table)
        plots = []
        curve = self._serving_curve(out, table, built)
        if curve:
            plots.append(curve)
            parts.append(f"<img src='{curve}' alt='output tokens/s per GPU against tokens/s per user, latest runs'>")
        parts.append("<h2>History</h2>")
        units = {m: s.unit for row in table.rows for m, s in row.metrics.items()}
        for s in series:
            points = [(run.started.ts, _points(run, metrics)) for run in s.runs]
            flags = sorted({(run.started.ts, c.setup, c.metric, c.verdict) for run, found in s.changes for c in found})
            name = f"plots/{spec.name}-{_hash(s.label, metrics, units, points, flags)}.png"
            parts.append(f"<h3>{html.escape(s.label)}</h3>")
            if not any(by_setup for _, by_setup in points):
                parts.append("<p>No ok results to draw: see the table and the runs below.</p>")
                continue
            if sum(bool(by_setup) for _, by_setup in points) == 1:  # one point per line: said, not drawn
                parts.append("<p>One run with ok results: nothing to draw over time; its numbers are in the table"
                             " above.</p>")
                continue
            if not (out / name).is_file():  # named by its inputs: an unchanged plot is not drawn again
                _history_plot(out / name, [(m, units.get(m, "")) for m in metrics], points, flags)
                built.plots.append(name)
            plots.append(name)
            parts.append(f"<img src='{name}' alt='history of {html.escape(s.label)}'>")
        parts.append("<h2>Changes beyond noise, each run against the previous run of its series</h2>")
        change_rows = [[r.started.ts[:16].replace("T", " "), s.label, r.started.run_id, c.setup,
                        f"{c.metric} ({c.unit})", fmt(c.a), fmt(c.b), f"{c.ratio:.3f}" if c.ratio else "",
                        c.verdict]
                       for s in series for r, found in s.changes for c in found]
        change_rows.sort(key=lambda cells: cells[0], reverse=True)
        header = ["when", "series", "run", "setup", "metric", "before", "after", "after/before",
                  f"verdict (noise: max({compare.NOISE_FLOOR:.0%}, 2 CV))"]
        judged = [cells for cells in change_rows if cells[8] != compare.NO_SPREAD]
        unjudged = [cells for cells in change_rows if cells[8] == compare.NO_SPREAD]
        if judged:
            parts.append(_table(header, judged, flag=8))
        if unjudged:  # folded: a wall of them would hide the changes that are beyond noise
            parts.append(f"<details><summary>{html.escape(single_runs_line(len(unjudged)))}</summary>"
                         f"{_table(header, unjudged, flag=8)}</details>")
        if not change_rows:
            parts.append(f"<p>{html.escape(nothing_changed(series))}</p>")
        parts.append("<h2>Runs</h2>")
        run_rows = []
        for s in reversed(series):
            for run in reversed(s.runs):
                base = f"runs/{_safe(run.started.run_id)}/"
                status = run.finished.status if run.finished else "partial (no run_finished)"
                run_rows.append([run.started.ts[:16].replace("T", " "), s.label, run.started.run_id,
                                 f"{run.price_usd_per_hour:g}" if run.price_usd_per_hour else "-",
                                 status + (" (smoke)" if run.started.smoke else ""),
                                 f"<a href='{base}{CONFIG_FILE}'>config</a> <a href='{base}environment.json'>"
                                 f"environment</a> <a href='{base}{RECORDS_FILE}'>records</a>"])
        parts.append(_table(["when", "series", "run", "$/hour", "status", "files"], run_rows, raw=(5,)))
        parts.append("</body></html>")
        last = [c for s in series if s.changes for c in s.changes[-1][1]]
        unjudged = [c for c in last if c.verdict == compare.NO_SPREAD]
        headline = [c for c in unjudged if spec.cost and c.metric == spec.cost.metric] or unjudged
        widest = max(headline, key=lambda c: abs(_log_ratio(c)), default=None)  # the cost basis's, where it moved
        summary = {"title": spec.title, "runs": len(self.runs), "gpus": sorted({r.gpu for r in self.runs}),
                   "series": [s.label for s in series], "latest": self.runs[-1].started.ts[:16].replace("T", " "),
                   "worse": sum(c.verdict == "worse" for c in last), "better": sum(c.verdict == "better" for c in last),
                   "smoke": any(r.started.smoke for r in self.runs),
                   "compared": sum(len(s.runs) > 1 for s in series), "no_verdict": len(unjudged),
                   "decide": decision,
                   "widest": f"{widest.setup} {widest.metric} {fmt(widest.a)} -> {fmt(widest.b)} {widest.unit}"
                             if widest else ""}
        return "\n".join(parts), plots, summary


def single_runs_line(count: int) -> str:
    """The one line the changes with no verdict fold into (they open below it)."""
    return (f"{count} change{'s' * (count != 1)} between single runs: {compare.NO_SPREAD.split(' (')[0]} (one repeat"
            " on a side, no spread to judge by; open to list them)")


def nothing_changed(series: list[Series]) -> str:
    """What the changes section says when it lists no change: never "within noise" where nothing was compared."""
    if not any(len(s.runs) > 1 for s in series):
        return ("One run: nothing to compare." if sum(len(s.runs) for s in series) == 1
                else "One run per series: nothing to compare.")
    return "None: every run is within noise of the one before it."


def _log_ratio(row: compare.Row) -> float:
    import math

    return math.log(row.b / row.a) if row.a and row.b and row.a * row.b > 0 else math.inf


def latest_change(s: dict) -> tuple[str, str]:
    """The index's word on a study's latest runs against the runs before them, and its CSS class."""
    if not s["compared"]:
        return ("one run: nothing to compare" if s["runs"] == 1 else "one run per series: nothing to compare"), "no"
    flags = [f"{s[k]} {k}" for k in ("worse", "better") if s[k]]
    if s["no_verdict"]:
        flags.append(f"{s['no_verdict']} {compare.NO_SPREAD}, widest {s['widest']}")
    state = "worse" if s["worse"] else "better" if s["better"] else "no" if s["no_verdict"] else "ok"
    return ", ".join(flags) or "within noise", state


NOT_HISTORY = (COST_ROLE, VALUE_ROLE, ENERGY_PER_UNIT_ROLE, PEAK_MEMORY_ROLE)  # roles not drawn over time


def history_metrics(table: report.WorkloadReport) -> list[str]:
    """The headline metrics drawn over time: the table's first four measured ones (by their role, not a cost, value,
    energy per unit or peak memory)."""
    return [m for m in table.columns if table.roles.get(m) not in NOT_HISTORY][:4]


def _points(run: stored_runs.StoredRun, metrics: list[str]) -> dict:
    return {s.setup: {m: s.metrics[m].median for m in metrics if m in s.metrics} for s in run.summary()
            if any(m in s.metrics for m in metrics)}


def _history_plot(path: Path, metrics: list[tuple[str, str]], points: list[tuple[str, dict]],
                  flags: list[tuple[str, str, str, str]]) -> None:
    """Per metric, one line per setup over the runs' times, changes beyond noise marked (red worse, green better)."""
    from matplotlib.dates import ConciseDateFormatter
    from matplotlib.figure import Figure  # not pyplot: no global state, no GUI backend to load
    from matplotlib.lines import Line2D

    path.parent.mkdir(parents=True, exist_ok=True)
    cols = max(1, min(2, len(metrics)))
    rows = max(1, (len(metrics) + cols - 1) // cols)
    fig = Figure(figsize=(6 * cols, 2.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    verdicts = {(ts, setup, metric): verdict for ts, setup, metric, verdict in flags}
    setups = list(dict.fromkeys(setup for _, by_setup in points for setup in by_setup))
    colors = {setup: f"C{i % 10}" for i, setup in enumerate(setups)}
    for ax, (metric, unit) in zip(axes.flat, metrics, strict=False):
        for setup in setups:
            at = [(ts, by_setup[setup][metric]) for ts, by_setup in points if metric in by_setup.get(setup, {})]
            if not at:
                continue
            xs = [datetime.fromisoformat(ts.replace("Z", "+00:00")) for ts, _ in at]
            ax.plot(xs, [y for _, y in at], "o-", markersize=3, label=setup, color=colors[setup])
            for verdict, style in (("worse", "rv"), ("better", "g^")):
                marked = [(x, y) for x, (ts, y) in zip(xs, at, strict=True)
                          if verdicts.get((ts, setup, metric)) == verdict]
                if marked:
                    ax.plot(*zip(*marked, strict=True), style, markersize=10, fillstyle="none", markeredgewidth=2)
        times = [datetime.fromisoformat(ts.replace("Z", "+00:00")) for ts, _ in points]
        if min(times) == max(times):  # one run: a day either side, not the years matplotlib picks
            ax.set_xlim(min(times) - timedelta(days=1), max(times) + timedelta(days=1))
        ax.set_title(f"{metric} ({unit})" if unit else metric, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(ax.xaxis.get_major_locator()))
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[s], marker="o", markersize=3, label=s) for s in setups]
    handles += [Line2D([], [], color="r", marker="v", linestyle="", fillstyle="none", label="worse than before"),
                Line2D([], [], color="g", marker="^", linestyle="", fillstyle="none", label="better than before")]
    fig.legend(handles=handles, fontsize=7, loc="outside right upper")
    fig.savefig(path, dpi=96)


def _head(title: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<link rel='stylesheet' href='site.css'></head><body>")


def _whole_reasons(header: list[str], rows: list[report.Row]) -> dict[int, tuple[int, str]]:
    """Rows that did not run (no metrics, a reason): {row index: (status column, the whole reason)}."""
    at = header.index("status")
    return {i: (at, "; ".join(row.reasons) + (" (smoke run)" if row.smoke else "")) for i, row in enumerate(rows)
            if row.status != "ok" and not row.metrics and row.reasons}


def _table(header: list[str], rows: list[list[str]], raw: tuple[int, ...] = (), flag: int | None = None,
           whole: dict[int, tuple[int, str]] | None = None) -> str:
    """An HTML table; cells are escaped except columns `raw` (HTML made here); column `flag` colours a verdict;
    `whole`: rows shown as their first cells and then one line, their whole reason, across the rest."""
    out = ["<div class='wide'><table>", "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>"]
    for index, cells in enumerate(rows):
        if whole and index in whole:
            at, reason = whole[index]
            out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells[:at])
                       + f"<td class='reason' colspan='{len(header) - at}'><div>{html.escape(reason)}</div></td></tr>")
            continue
        tds = []
        for i, c in enumerate(cells):
            css = (f" class='{c.split(' ')[0]}'" if i == flag else " class='num'" if NUMBER.match(c)
                   else " class='long'" if len(re.sub(r"<[^>]+>", "", c)) > 40 else "")
            tds.append(f"<td{css}>{c if i in raw else html.escape(c)}</td>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _index(studies: dict[str, dict]) -> str:
    parts = [_head("gpubench results"), "<h1>gpubench results</h1>",
             f"<p>{sum(s['runs'] for s in studies.values())} runs of {len(studies)} studies. Each study's page has "
             "the latest table per GPU, config and price, the history of its headline metrics, and the changes "
             "beyond noise against the previous run.</p>"]
    rows = []
    for name, s in sorted(studies.items()):
        said, state = latest_change(s)
        # the decision beside the study's name, where it is read first; the bookkeeping after it
        rows.append([f"<a href='{html.escape(name)}.html'>{html.escape(name)}</a>", s["title"], s["decide"] or "-",
                     str(s["runs"]), ", ".join(s["gpus"]), s["latest"],
                     f"<span class='{state}'>{html.escape(said)}</span>" + (" (smoke runs)" if s["smoke"] else "")])
    parts.append(_table(["study", "title", "which GPU: cheapest per unit; fastest; least energy (stored prices)",
                         "runs", "GPUs", "latest run (UTC)", "latest runs against the run before"], rows, raw=(0, 6)))
    parts.append("</body></html>")
    return "\n".join(parts)
