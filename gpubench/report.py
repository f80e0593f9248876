"""Stored runs into the tables a person reads: per workload, one row per (GPU, setup).

Runs of one workload on the same GPU are pooled, so repeats across runs give the spread. Each row
carries its hourly price(s) as the runs recorded them, the post's number for the same GPU class (as a
ratio), and, where the workload reports the FLOPs it did, the fraction of the GPU's datasheet peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench import reference
from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.registry import UnknownName
from gpubench.schema import MetricSummary, SetupResult, summarize
from gpubench.stored import StoredRun
from gpubench.summary import cell, fmt, headline_metrics
from gpubench.workload import load_module

FLOPS_METRIC = "achieved_tflops"  # a workload that can count its FLOPs reports this; dtype in config.dtype


@dataclass
class Row:
    gpu: str
    setup: str
    prices: list[float]
    runs: int
    partial: bool
    statuses: list[str]
    metrics: dict[str, MetricSummary]
    dtype: str | None = None

    @property
    def status(self) -> str:
        if "ok" in self.statuses:
            return "ok"
        return self.statuses[-1] if self.statuses else "missing"


@dataclass
class WorkloadReport:
    spec: WorkloadSpec
    columns: list[str]
    rows: list[Row] = field(default_factory=list)

    def published(self, row: Row, metric: str) -> reference.Published | None:
        return reference.published_for(self.spec.name, row.gpu, row.setup, metric)


def build(runs: list[StoredRun]) -> list[WorkloadReport]:
    by_workload: dict[str, list[StoredRun]] = {}
    for run in runs:
        try:
            WORKLOADS.get(run.workload)
        except UnknownName as exc:
            raise ValueError(f"{run.path}: {exc}") from None
        by_workload.setdefault(run.workload, []).append(run)
    return [_workload_report(WORKLOADS.get(name), group) for name, group in by_workload.items()]


def _workload_report(spec: WorkloadSpec, runs: list[StoredRun]) -> WorkloadReport:
    module = load_module(spec)
    pooled: dict[tuple[str, str], list[tuple[StoredRun, SetupResult]]] = {}
    for run in runs:
        for setup in run.started.setups:
            pooled.setdefault((run.gpu, setup), [])
        for result in run.results:
            pooled.setdefault((run.gpu, result.setup), []).append((run, result))
    order = {setup: i for i, setup in enumerate(spec.setups)}
    rows = []
    for (gpu, setup), items in sorted(pooled.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))):
        source = [run for run in runs if run.gpu == gpu and setup in run.started.setups]
        ok = [_costed(spec, run, result) for run, result in items if result.status == "ok"]
        metrics = {}
        for name in dict.fromkeys(k for r in ok for k in r.metrics):
            values = [r.metrics[name].value for r in ok if name in r.metrics]
            metrics[name] = summarize(next(r.metrics[name].unit for r in ok if name in r.metrics), values)
        rows.append(Row(gpu=gpu, setup=setup, prices=sorted({p for r in source if (p := r.price_usd_per_hour)}),
                        runs=len(source), partial=any(r.partial for r in source),
                        statuses=[result.status for _, result in items], metrics=metrics,
                        dtype=next((str(r.started.config.get("dtype")) for r in source
                                    if r.started.config.get("dtype")), None)))
    return WorkloadReport(spec=spec, columns=headline_metrics(
        module, list(dict.fromkeys(name for row in rows for name in row.metrics))), rows=rows)


def _costed(spec: WorkloadSpec, run: StoredRun, result: SetupResult) -> SetupResult:
    """A result with its cost per unit at its own run's price, when the run recorded one and no cost yet."""
    from gpubench.runner import cost_metrics

    price = run.price_usd_per_hour
    if price and not any(name.startswith("usd_per_") for name in result.metrics):
        result = result.model_copy(deep=True)
        result.metrics.update(cost_metrics(spec, result.metrics, price))
    return result


def peak_fraction(row: Row) -> float | None:
    """Achieved TFLOP/s over the GPU's dense datasheet peak for the run's dtype."""
    achieved = row.metrics.get(FLOPS_METRIC)
    peak = reference.peak_for(row.gpu)
    if achieved is None or peak is None:
        return None
    dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(row.dtype or "", row.dtype or "bf16")
    top = peak.tflops.get(dtype)
    return achieved.median / top if top else None


def markdown(reports: list[WorkloadReport]) -> str:
    out = []
    for report in reports:
        spec = report.spec
        out += [f"## {spec.name}: {spec.title}", "", f"Study: {spec.study}", ""]
        units = {m: s.unit for row in report.rows for m, s in row.metrics.items()}
        header = ["GPU", "$/hour", "setup", "status", "n", *[f"{m} ({units[m]})" for m in report.columns],
                  "vs post", "of peak"]
        out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in report.rows:
            price = ", ".join(f"{p:g}" for p in row.prices) or "-"
            n = sum(status == "ok" for status in row.statuses)
            status = row.status + (" (partial run)" if row.partial else "")
            cells = [cell(row.metrics.get(m)) for m in report.columns]
            fraction = peak_fraction(row)
            out.append("| " + " | ".join([row.gpu, price, row.setup, status, f"{n}/{len(row.statuses)}", *cells,
                                           vs_post(report, row), f"{fraction:.0%}" if fraction else ""]) + " |")
        out.append("")
    return "\n".join(out)


def vs_post(report: WorkloadReport, row: Row) -> str:
    """The first headline metric the post published for this GPU class, as this run's ratio to it."""
    for metric in report.columns:
        published = report.published(row, metric)
        if published and metric in row.metrics and published.value:
            return f"{row.metrics[metric].median / published.value:.2f}x of {fmt(published.value)} ({published.gpu})"
    return ""
