"""The table a person reads at the end of a run, also saved as summary.md and summary.csv.

Per setup: its status, the workload's headline metrics (median and spread over repeats), peak memory,
the cost and the energy per unit of output (and where the energy came from), and the speed-up against the
study's baseline setup (the catalog's first setup) on the cost basis metric. A spread (CV) over 5% is flagged:
that difference may be noise.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpubench.catalog import WorkloadSpec
from gpubench.measure import energy, flops
from gpubench.schema import (
    COST_ROLE,
    ENERGY_PER_UNIT_ROLE,
    PEAK_MEMORY_ROLE,
    MetricRole,
    MetricSummary,
    SetupSummary,
)

if TYPE_CHECKING:
    from gpubench.workload import WorkloadDefinition

NOISY_CV = 0.05
SMOKE_BANNER = "--smoke: these numbers test the code path at a tiny size; they are not a benchmark."
NO_PRICE = "cost not computed: no --price (or GPUBENCH_PRICE_USD_PER_HOUR)"
BESIDE_HEADLINE = (PEAK_MEMORY_ROLE, COST_ROLE, ENERGY_PER_UNIT_ROLE)  # the roles shown after the headline metrics


@dataclass
class Column:
    metric: str
    unit: str


def headline_metrics(workload: WorkloadDefinition | None, reported: dict[str, MetricRole | None]) -> list[str]:
    """Of the metrics reported (name -> role, as the records carry it): the workload's HEADLINE list, else its first
    four metrics (the first four reported where no definition is at hand: the launcher imports no workload code);
    then those whose role is peak memory, cost or energy per unit, then how close to the machine it ran (achieved
    TFLOP/s, share of the datasheet peak)."""
    machine = [flops.METRIC, flops.PEAK_METRIC]
    declared = list(workload.metrics) if workload is not None else list(reported)
    chosen = list((workload.headline if workload is not None else ()) or [m for m in declared if m in reported][:4])
    chosen += [m for m, role in reported.items() if role in BESIDE_HEADLINE and m not in chosen + machine]
    chosen += [m for m in machine if m not in chosen]
    return [m for m in chosen if m in reported]


def roles(metrics: Iterable[dict[str, MetricSummary]]) -> dict[str, MetricRole | None]:
    """Each summarised metric's role (as its results carried it), in the order they are reported."""
    found: dict[str, MetricRole | None] = {}
    for summaries in metrics:
        for name, m in summaries.items():
            found[name] = found.get(name) or m.role
    return found


def speedups(spec: WorkloadSpec, summaries: list[SetupSummary]) -> dict[str, float]:
    """Each setup's cost-basis metric against the baseline setup's (higher is faster)."""
    if spec.cost is None:
        return {}
    values = {s.setup: s.metrics[spec.cost.metric].median for s in summaries if spec.cost.metric in s.metrics}
    base = values.get(spec.setups[0])
    if not base:
        return {}
    if spec.cost.kind == "rate":
        return {setup: value / base for setup, value in values.items()}
    return {setup: base / value for setup, value in values.items() if value}


def cell(summary: MetricSummary | None) -> str:
    if summary is None:
        return ""
    text = fmt(summary.median)
    if summary.n > 1 and summary.cv is not None:
        text += f" ±{summary.cv * 100:.0f}%" + (" (noisy)" if summary.cv > NOISY_CV else "")
    return text


def fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def energy_per_setup(results) -> dict[str, str]:
    """Where each setup's energy came from ("NVML counter", "power integral"), or "none: why", over its ok
    results; setups stored before energy (schema 1.1) are left out."""
    seen: dict[str, list[str]] = {}
    for result in results:
        facts = getattr(result, "energy", None)
        if result.status != "ok" or facts is None:
            continue
        if facts.absent:
            label = f"none: {facts.absent}"
        elif facts.source == energy.COUNTER:
            label = "NVML counter"
        elif facts.source and facts.source.startswith(energy.INTEGRAL):
            label = "power integral"
        else:
            label = "counter + power integral"
        seen.setdefault(result.setup, []).append(label)
    return {setup: "; ".join(dict.fromkeys(labels)) for setup, labels in seen.items()}


def energy_note(energies: dict[str, str]) -> str | None:
    """When no setup measured energy (a CPU run): one line with why, in place of a column that says it per row."""
    if not energies or any(not label.startswith("none: ") for label in energies.values()):
        return None
    reasons = dict.fromkeys(label.removeprefix("none: ") for label in energies.values())
    return "energy not measured: " + "; ".join(reasons)


def table(spec: WorkloadSpec, workload: WorkloadDefinition | None, summaries: list[SetupSummary],
          verdicts: dict[str, str] | None = None,
          energies: dict[str, str] | None = None) -> tuple[list[str], list[list[str]]]:
    """verdicts: what bounded each setup (gpubench/results/verdict.py), shown last when given; energies: where its
    energy came from (energy_per_setup), after it."""
    metrics = headline_metrics(workload, roles(s.metrics for s in summaries))
    units = {name: s.metrics[name].unit for s in summaries for name in s.metrics}
    gains = speedups(spec, summaries)
    header = ["setup", "status", "n", *[f"{m} ({units[m]})" for m in metrics]]
    if gains:
        header.append(f"vs {spec.setups[0]}")
    if verdicts:
        header.append("verdict")
    if energies:
        header.append("energy")
    rows = []
    for s in summaries:
        row = [s.setup, s.status, f"{s.ok_repeats}/{s.repeats}", *[cell(s.metrics.get(m)) for m in metrics]]
        if gains:
            row.append(f"{gains[s.setup]:.2f}x" if s.setup in gains else "")
        if verdicts:
            row.append(verdicts.get(s.setup, ""))
        if energies:
            row.append(energies.get(s.setup, ""))
        rows.append(row)
    return header, rows


def markdown(header: list[str], rows: list[list[str]], notes: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join([*(f"> {note}" for note in notes), *([""] if notes else []), *lines]) + "\n"


HEADER_FOLD = 20  # a header longer than this may fold onto a second line before its column takes more room
PADDING = 3  # a column's padding and rule in the fitted table


def fitted(header: list[str], rows: list[list[str]], notes: list[str], width: int) -> str:
    """The table for a terminal `width` columns wide (as the live view fits its panel): as many columns as fit side
    by side, the rest in blocks below, each block led by the first column (the setup); a cell wider than the
    terminal folds. The notes come first, as in the markdown."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    def need(i: int) -> int:
        return max([len(row[i]) for row in rows] + [min(len(header[i]), HEADER_FOLD)]) + PADDING

    blocks, block = [], [0]
    for i in range(1, len(header)):
        if len(block) > 1 and sum(need(j) for j in block) + need(i) > width:
            blocks.append(block)
            block = [0]
        block.append(i)
    blocks.append(block)
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False, emoji=False)
    for note in notes:
        console.print(f"> {note}", markup=False, highlight=False)
    for block in blocks:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for i in block:
            table.add_column(header[i], overflow="fold")
        for row in rows:
            table.add_row(*[row[i] for i in block])
        console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def full_csv(summaries: list[SetupSummary]) -> str:
    """Every metric of every setup, one row per (setup, metric), with the whole spread."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["setup", "status", "metric", "unit", "n", "median", "min", "max", "mean", "stdev", "cv"])
    for s in summaries:
        if not s.metrics:
            writer.writerow([s.setup, s.status, "", "", 0, "", "", "", "", "", ""])
        for name, m in s.metrics.items():
            writer.writerow([s.setup, s.status, name, m.unit, m.n, m.median, m.min, m.max, m.mean, m.stdev,
                             "" if m.cv is None else m.cv])
    return out.getvalue()


def notes(smoke: bool, priced: bool, summaries: list[SetupSummary]) -> list[str]:
    out = [SMOKE_BANNER] if smoke else []
    if not priced:
        out.append(NO_PRICE)
    noisy = sorted({s.setup for s in summaries for m in s.metrics.values() if m.n > 1 and (m.cv or 0) > NOISY_CV})
    if noisy:
        out.append(f"spread over {NOISY_CV:.0%} (noisy, treat differences as within noise): {', '.join(noisy)}")
    skipped = [s.setup for s in summaries if s.status == "skipped"]
    if skipped and len(skipped) == len(summaries):
        out.append("no setup ran here (each says why it was skipped): exit 1")
    elif skipped:  # exit_codes.OK: a stated reason to skip fails nothing
        out.append("skipped, each for the reason on its line, not failed (exit 0 if the rest are ok): "
                   + ", ".join(skipped))
    if not_run := [s.setup for s in summaries if s.status == "not-run"]:
        out.append("not run, the run ended before them (no result; run them again with --setups): "
                   + ", ".join(not_run))
    return out
