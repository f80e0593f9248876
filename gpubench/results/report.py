"""Stored runs into the tables a person reads: per workload, one row per (GPU, setup).

Runs of one workload on the same GPU, config and hourly price are pooled, so repeats across runs give the
spread; the same GPU at another price (another region or provider) is a row of its own, with its own cost. Each
row carries its hourly price as the runs recorded it, whether its runs were --smoke runs, the one-line reason of
each setup that did not run ok, the post's number for the same GPU class (as a
ratio, or "within noise" of it), and, where the workload counts its FLOPs, achieved TFLOP/s and the
share of the GPU's dense datasheet peak (gpubench/measure/flops.py). A difference smaller than the measured
noise is never shown as a win: the noise rule is compare.py's.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from gpubench import pricing, reference
from gpubench.catalog import WorkloadSpec
from gpubench.loadgen import slo
from gpubench.measure import flops
from gpubench.registry import UnknownName
from gpubench.results import compare, studies, verdict
from gpubench.results.stored_runs import StoredRun
from gpubench.results.summary import cell, energy_per_setup, fmt, headline_metrics, roles
from gpubench.schema import COST_ROLE, MetricRole, MetricSummary, SetupResult, summarize
from gpubench.workload import WorkloadDefinition

SCALING_METRICS = ("tokens_per_s", "scaling_efficiency_pct")  # drawn against GPU count (ddp-scaling)
REASON_CHARS = 120  # an error's one line in a table cell; the whole line stays in the run's records


@dataclass
class Row:
    gpu: str
    setup: str
    price: float | None
    runs: int
    partial: bool
    statuses: list[str]
    metrics: dict[str, MetricSummary]
    dtype: str | None = None  # what the matmuls ran in: the results' dtype, else (runs before it) the config's
    config: str = ""  # the config fields this row's runs set apart from other runs of the workload; "" when all agree
    smoke: bool = False  # its runs were --smoke runs: a code-path test at a tiny size, not a benchmark
    reasons: list[str] = field(default_factory=list)  # the one-line error of each result that was not ok
    verdict: str = ""  # what bounded its ok results (gpubench/results/verdict.py); "" for runs stored before verdicts
    energy: str = ""  # where its energy came from, or why none (summary.energy_per_setup); "" for runs before it

    @property
    def label(self) -> str:
        return f"{self.gpu} ({self.config})" if self.config else self.gpu

    @property
    def status(self) -> str:
        if "ok" in self.statuses:
            return "ok"
        return self.statuses[-1] if self.statuses else "missing"


@dataclass
class WorkloadReport:
    spec: WorkloadSpec
    workload: WorkloadDefinition
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    better: dict[str, str | None] = field(default_factory=dict)  # metric -> "higher"/"lower", as results carry it
    roles: dict[str, MetricRole | None] = field(default_factory=dict)  # metric -> its role, as results carry it
    targets: list[slo.Target] = field(default_factory=list)  # the latency targets its serving runs were judged at
    decision: str = ""  # which GPU, with its figures: recommend's line at the stored prices (build fills it)

    def published(self, row: Row, metric: str) -> reference.Published | None:
        return reference.published_for(self.spec.name, row.gpu, row.setup, metric)

    @property
    def counts_flops(self) -> bool:
        return any(flops.METRIC in row.metrics for row in self.rows)


def build(runs: list[StoredRun]) -> list[WorkloadReport]:
    by_workload: dict[str, list[StoredRun]] = {}
    for run in runs:
        try:
            studies.spec_of(run.workload)
        except UnknownName as exc:
            raise ValueError(f"{run.path}: {exc}") from None
        by_workload.setdefault(run.workload, []).append(run)
    from gpubench.results import recommend  # it ranks with this module's config labels

    reports = []
    for name, group in by_workload.items():
        spec = studies.spec_of(name, group)
        reports.append(workload_report(spec, group))
        reports[-1].decision = recommend.decide(spec, group)
    return reports


DECISION = "Which GPU (gpubench recommend, stored prices)"


def workload_report(spec: WorkloadSpec, runs: list[StoredRun],
                    variant: dict[int, str] | None = None) -> WorkloadReport:
    """The workload's rows; `variant` labels each run's config (by id(run)) when the caller chose the labels."""
    workload = studies.definition_of(spec)
    variant = variant or config_variants(runs)
    series = {id(run): (run.gpu, variant[id(run)], run.price_usd_per_hour, run.started.smoke) for run in runs}
    pooled: dict[tuple, list[tuple[StoredRun, SetupResult]]] = {}
    for run in runs:
        for setup in run.started.setups:
            pooled.setdefault((*series[id(run)], setup), [])
        for result in run.results:
            pooled.setdefault((*series[id(run)], result.setup), []).append((run, result))
    prices = {}  # (GPU, config) -> its prices: a label names the price only where one GPU and config has several
    for gpu, config, price, _smoke in series.values():
        prices.setdefault((gpu, config), set()).add(price)
    order = {setup: i for i, setup in enumerate(spec.setups)}
    rows = []
    for key, items in sorted(pooled.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0, kv[0][3],
                                                              order.get(kv[0][4], 99))):
        gpu, config, price, smoke, setup = key
        source = [run for run in runs if series[id(run)] == key[:4] and setup in run.started.setups]
        ok = [_with_peak(run, _costed(workload, run, result)) for run, result in items if result.status == "ok"]
        metrics = {}
        for name in dict.fromkeys(k for r in ok for k in r.metrics):
            values = [r.metrics[name].value for r in ok if name in r.metrics]
            first = next(r.metrics[name] for r in ok if name in r.metrics)
            metrics[name] = summarize(first.unit, values, first.role)
        dtypes = [_compute_dtype(run, result) for run, result in items if result.status == "ok"]
        if len(prices[(gpu, config)]) > 1:
            config = ", ".join(filter(None, [config, f"${price:g}/h" if price else "no price"]))
        rows.append(Row(gpu=gpu, setup=setup, price=price, runs=len(source), partial=any(r.partial for r in source),
                        statuses=[result.status for _, result in items], metrics=metrics,
                        dtype=next((d for d in dtypes if d), None), config=config, smoke=smoke,
                        reasons=list(dict.fromkeys(f"{result.status}: {result.error}" for _, result in items
                                                   if result.status != "ok" and result.error)),
                        verdict=verdict.per_setup([result for _, result in items]).get(setup, ""),
                        energy=energy_per_setup([result for _, result in items]).get(setup, "")))
    reported = roles(row.metrics for row in rows)
    columns = [m for m in headline_metrics(workload, reported) if m not in (flops.METRIC, flops.PEAK_METRIC)]
    better = {name: m.better for run in runs for r in run.results for name, m in r.metrics.items()}
    targets = list(dict.fromkeys(t for run in runs if (t := slo.of_config(run.started.config))))
    return WorkloadReport(spec=spec, workload=workload, columns=columns, rows=rows, better=better, roles=reported,
                          targets=targets)


def config_variants(runs: list[StoredRun]) -> dict[int, str]:
    """Each run's config fields that set it apart from the other runs ("steps=20"), so runs of different configs are
    never pooled as repeats of one measurement; "" for every run when their configs agree. A field at its default
    (the study's, or its smoke size for a smoke run) or None (a run made before the field was) names nothing: a
    series is named by what it set differently, not by every field some run left as it was."""
    configs = [_set_apart(run) for run in runs]
    varying = sorted({key for config in configs for key in config
                      if any(other.get(key) != config.get(key) for other in configs)})
    return {id(run): ", ".join(f"{key}={config[key]}" for key in varying if key in config)
            for run, config in zip(runs, configs, strict=True)}


def _set_apart(run: StoredRun) -> dict[str, Any]:
    """The run's config fields that are neither None nor the default."""
    defaults = config_defaults(run.workload, run.started.smoke)
    return {key: value for key, value in run.started.config.items()
            if value is not None and (key not in defaults or _as_stored(value) != defaults[key])}


@functools.cache
def config_defaults(workload: str, smoke: bool) -> dict[str, Any]:
    """A workload's config defaults as a run stores them (JSON values), its smoke size on top for a smoke run; {}
    for a workload this version does not know (its runs are named by every field that differs)."""
    try:
        definition = studies.definition_of(studies.spec_of(workload))
        fields = dataclasses.fields(definition.config)
    except (UnknownName, TypeError):
        return {}
    defaults = {}
    for f in fields:
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    if smoke:
        defaults.update(definition.smoke)
    return {name: _as_stored(value) for name, value in defaults.items()}


def _as_stored(value: Any) -> Any:
    """A value as a run's JSON config holds it (a tuple is a list there)."""
    return json.loads(json.dumps(value, default=str))


def _costed(workload: WorkloadDefinition, run: StoredRun, result: SetupResult) -> SetupResult:
    """A result with its costs at its own run's price, when the run recorded one and no cost yet."""
    price = run.price_usd_per_hour
    if price and not any(m.role == COST_ROLE for m in result.metrics.values()):
        result = result.model_copy(deep=True)
        result.metrics.update(pricing.cost_metrics(workload.spec.cost, result.metrics, price, workload.metrics))
    return result


def _compute_dtype(run: StoredRun, result: SetupResult) -> str | None:
    """The result's dtype; a result stored before the harness recorded one on every result: its config's."""
    dtype = result.dtype or run.started.config.get("dtype")
    return str(dtype) if dtype else None


def _with_peak(run: StoredRun, result: SetupResult) -> SetupResult:
    """A result with pct_of_peak as the runner adds it, for runs stored before it did (achieved TFLOP/s only)."""
    if flops.PEAK_METRIC in result.metrics or result.device == "cpu":  # the run's GPU idled through a CPU result
        return result
    share = flops.peak_share(result.metrics, run.gpu, _compute_dtype(run, result))
    if share is None:
        return result
    result = result.model_copy(deep=True)
    result.metrics[flops.PEAK_METRIC] = share
    return result


def datasheet_peak(row: Row) -> float | None:
    """The dense peak TFLOP/s that the row's "of peak" is a share of: its GPU class at its compute dtype."""
    peak = reference.peak_for(row.gpu)
    return peak.tflops.get(flops.PEAK_DTYPES.get(row.dtype or "", "")) if peak else None


def table(report: WorkloadReport) -> tuple[list[str], list[list[str]]]:
    units = {m: s.unit for row in report.rows for m, s in row.metrics.items()}
    header = ["GPU", "$/hour", "setup", "status", "n", *[f"{m} ({units[m]})" for m in report.columns], "vs post"]
    if report.counts_flops:
        header += ["TFLOP/s", "of peak"]
    judged = any(row.verdict for row in report.rows)
    if judged:
        header.append("verdict")
    energies = any(row.energy for row in report.rows)
    if energies:
        header.append("energy")
    rows = []
    for row in report.rows:
        price = f"{row.price:g}" if row.price else "-"
        n = sum(status == "ok" for status in row.statuses)
        status = status_cell(row)
        cells = [row.label, price, row.setup, status, f"{n}/{len(row.statuses)}",
                 *[cell(row.metrics.get(m)) for m in report.columns], vs_post(report, row)]
        if report.counts_flops:
            cells += [cell(row.metrics.get(flops.METRIC)), of_peak(row)]
        if judged:
            cells.append(row.verdict)
        if energies:
            cells.append(_shortened(row.energy.replace("|", "/")))
        rows.append(cells)
    return header, rows


def status_cell(row: Row) -> str:
    """"ok", "ok (smoke run)", "error: CUDA out of memory ... (partial run)": what a person must know of the row."""
    status = row.status
    if row.status != "ok" and row.reasons:
        status = "; ".join(_shortened(reason.replace("|", "/")) for reason in row.reasons)
    notes = [note for note, on in (("smoke run", row.smoke), ("partial run", row.partial)) if on]
    return status + (f" ({', '.join(notes)})" if notes else "")


def _shortened(reason: str, most: int = REASON_CHARS) -> str:
    return reason if len(reason) <= most else reason[:most - 1].rstrip() + "…"


SMOKE_NOTE = "Rows marked smoke run come from --smoke runs: they test the code path at a tiny size; not a benchmark."


def of_peak(row: Row) -> str:
    """The row's share of its GPU's datasheet peak, with its spread: "50%", "26% ±7%"."""
    share = row.metrics.get(flops.PEAK_METRIC)
    if share is None:
        return ""
    number, _, spread = cell(share).partition(" ")
    return f"{number}%" + (f" {spread}" if spread else "")


def vs_post(report: WorkloadReport, row: Row) -> str:
    """The first headline metric the post published for this GPU class: this run's ratio to it, or within noise."""
    for metric in report.columns:
        published = report.published(row, metric)
        if published and metric in row.metrics and published.value:
            ours = row.metrics[metric]
            post = f"{fmt(published.value)} ({published.gpu})"
            if compare.verdict(published.value, ours.median, compare.noise(ours), None) == "within noise":
                return f"within noise of {post}"
            return f"{ours.median / published.value:.2f}x of {post}"
    return ""


@dataclass
class Standing:
    """One setup on several GPUs: the best and the runner-up on one metric, and whether the gap beats the noise."""

    setup: str
    best: Row
    runner_up: Row
    noise: float
    beyond_noise: bool
    judged: bool = True  # both sides have a spread (n >= 2): else the gap is shown with no verdict


def ranked_metric(report: WorkloadReport) -> str | None:
    """The metric GPUs are ranked on: the first headline metric that has a better direction."""
    return next((m for m in report.columns if report.better.get(m)), None)


def standings(report: WorkloadReport) -> list[Standing]:
    metric = ranked_metric(report)
    if metric is None:
        return []
    higher = report.better[metric] == "higher"
    out = []
    for setup in dict.fromkeys(row.setup for row in report.rows):
        rows = sorted((r for r in report.rows if r.setup == setup and metric in r.metrics),
                      key=lambda r: r.metrics[metric].median, reverse=higher)
        rival = next((r for r in rows[1:] if r.gpu != rows[0].gpu), None) if rows else None
        if rival is None:  # one GPU (in one config or several): nothing to rank
            continue
        best, second = rows[0].metrics[metric], rival.metrics[metric]
        gap = compare.noise(best, second)
        beyond = compare.verdict(second.median, best.median, gap, report.better[metric]) == "better"
        judged = min(best.n, second.n) >= 2 or best.median == second.median
        out.append(Standing(setup, rows[0], rival, gap, beyond and judged, judged))
    return out


def standing_lines(report: WorkloadReport) -> list[str]:
    """Per setup run on several GPUs, the best one, or "within noise" when the runner-up is as good as it."""
    found = standings(report)
    if not found:
        return []
    metric = ranked_metric(report)
    unit = found[0].best.metrics[metric].unit
    lines = [f"Best GPU per setup on {metric} ({report.better[metric]} is better; a gap within the measured "
             "noise is no win):"]
    for s in found:
        best, second = s.best.metrics[metric].median, s.runner_up.metrics[metric].median
        if not s.judged:
            apart = abs(best / second - 1) if second else 0.0
            lines.append(f"- {s.setup}: {compare.NO_SPREAD}: {s.best.label} {fmt(best)}, {s.runner_up.label} "
                         f"{fmt(second)} {unit} ({apart:.1%} apart; one repeat on a side, no spread to judge by)")
        elif s.beyond_noise:
            lines.append(f"- {s.setup}: {s.best.label}, {fmt(best)} against {fmt(second)} {unit} on "
                         f"{s.runner_up.label}")
        else:
            lines.append(f"- {s.setup}: within noise ({s.best.label} {fmt(best)}, {s.runner_up.label} {fmt(second)} "
                         f"{unit}; noise {s.noise:.0%})")
    return lines


@dataclass
class ScalingPoint:
    gpus: int
    row: Row


@dataclass
class ScalingLine:
    """One model size on one GPU type: its plain recipe against GPU count, and the fixes beside it."""

    gpu: str
    size: str
    plain: list[ScalingPoint]
    variants: list[ScalingPoint]

    def ideal(self, gpus: int) -> float | None:
        """Linear scaling from the 1-GPU plain rate: what tokens/s would be on `gpus` GPUs with no overhead."""
        one = next((p.row.metrics["tokens_per_s"].median for p in self.plain if p.gpus == 1), None)
        return one * gpus if one else None


def scaling_lines(report: WorkloadReport) -> list[ScalingLine]:
    """For a workload whose setups are recipes on N GPUs with a model size (ddp-scaling): its scaling curves.

    The GPU count is the recipe's `gpus`; a recipe is plain when every other field is at its default.
    """
    recipes = report.workload.setups
    lines: dict[tuple[str, str], ScalingLine] = {}
    for row in report.rows:
        recipe = recipes.get(row.setup) if isinstance(recipes, dict) else None
        if getattr(recipe, "size", None) is None or not hasattr(recipe, "gpus") or "tokens_per_s" not in row.metrics:
            continue
        line = lines.setdefault((row.label, recipe.size), ScalingLine(row.label, recipe.size, [], []))
        plain = recipe == type(recipe)(gpus=recipe.gpus, size=recipe.size)
        (line.plain if plain else line.variants).append(ScalingPoint(recipe.gpus, row))
    for line in lines.values():
        line.plain.sort(key=lambda p: p.gpus)
    return list(lines.values())


def target_line(report: WorkloadReport) -> str:
    """Which latency target the serving rows' goodput and slo_* columns were judged at; "" for other studies."""
    if not report.targets:
        return ""
    return "Latency target: " + "; ".join(t.describe() for t in report.targets) + \
        " (config slo_ttft_p99_ms, slo_tpot_p99_ms)"


def markdown(reports: list[WorkloadReport]) -> str:
    out = []
    for report in reports:
        spec = report.spec
        out += [f"## {spec.name}: {spec.title}", "", f"Study: {spec.study}", ""]
        header, rows = table(report)
        out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cells) + " |" for cells in rows]
        out.append("")
        if target_line(report):
            out += [target_line(report), ""]
        if any(row.smoke for row in report.rows):
            out += [SMOKE_NOTE, ""]
        standing = standing_lines(report)
        if standing:
            out += [*standing, ""]
        if report.decision:
            out += [f"{DECISION}: {report.decision}", ""]
    return "\n".join(out)
