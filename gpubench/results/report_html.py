"""The report as one HTML page with its plots embedded (PNG, base64), so it opens with no network.

Per workload: its table and which GPU is best per setup (or "within noise"), then bars of throughput
(the cost basis metric), cost per unit of output and peak memory per GPU and setup, error bars from min
to max over repeats; where the workload counts its FLOPs, achieved TFLOP/s against the datasheet peak;
for serving workloads, the trade-off curve of output tokens/s per GPU against tokens/s per user across
load levels, with its Pareto front (the points no other point beats on both); for DDP, tokens/s and
scaling efficiency against GPU count, with linear scaling drawn for reference.
"""

from __future__ import annotations

import base64
import html
import io
import re

from gpubench.measure import flops
from gpubench.results.report import (
    DECISION,
    SMOKE_NOTE,
    Row,
    WorkloadReport,
    datasheet_peak,
    scaling_lines,
    standing_lines,
    table,
    target_line,
)
from gpubench.results.summary import BESIDE_HEADLINE

SERVING_X, SERVING_Y = "per_user_tokens_per_s", "output_tokens_per_s"
LOAD_LEVEL = re.compile(r"-?[cu]\d+$")  # c64, bf16-c64, ollama-q4km-u16: one line per server mode


STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;font-size:13px}"
         "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}"
         "td:nth-child(-n+4),th{text-align:left}td.reason{text-align:left}"
         "td.reason div{white-space:normal;max-width:60em}"
         ".wide{overflow-x:auto;max-width:100%}img{max-width:100%;margin:1em 0}nav li{margin:.1em 0}")
TOC_FROM = 2  # studies in one report before it gets a table of contents


def render(reports: list[WorkloadReport], title: str = "gpubench report") -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    if len(reports) >= TOC_FROM:
        parts.append("<nav><h2>Contents</h2><ul>" + "".join(
            f"<li><a href='#{html.escape(r.spec.name)}'>{html.escape(r.spec.name)}</a>: {html.escape(r.spec.title)}"
            "</li>" for r in reports) + "</ul></nav>")
    for report in reports:
        parts.append(_table_html(report))
        for caption, image in plots(report):
            if image is None:  # one point: said, not drawn on a near-empty axis
                parts.append(f"<p class='single'>{html.escape(caption)}</p>")
                continue
            parts.append(f"<img alt='{html.escape(caption)}' title='{html.escape(caption)}' "
                         f"src='data:image/png;base64,{image}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def table_rows_html(header: list[str], rows: list[list[str]], report_rows: list[Row]) -> list[str]:
    """Table rows; a row that did not run (skipped, failed: no metrics) is one line: its labels, then its whole
    reason across the metric columns instead of a row of empty cells and a shortened reason."""
    status_at = header.index("status")
    out = []
    for cells, row in zip(rows, report_rows, strict=True):
        if row.status != "ok" and not row.metrics and row.reasons:
            reason = "; ".join(row.reasons) + (" (smoke run)" if row.smoke else "")
            out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells[:status_at])
                       + f"<td class='reason' colspan='{len(header) - status_at}'><div>{html.escape(reason)}</div>"
                       "</td></tr>")
        else:
            out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return out


def _table_html(report: WorkloadReport) -> str:
    spec = report.spec
    header, rows = table(report)
    out = [f"<h2 id='{html.escape(spec.name)}'>{html.escape(f'{spec.name}: {spec.title}')}</h2>",
           f"<p>Study: {html.escape(spec.study)}</p>",
           "<div class='wide'><table>", "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in header) + "</tr>"]
    out += table_rows_html(header, rows, report.rows)
    out.append("</table></div>")
    if target_line(report):
        out.append(f"<p>{html.escape(target_line(report))}</p>")
    if any(row.smoke for row in report.rows):
        out.append(f"<p><b>{html.escape(SMOKE_NOTE)}</b></p>")
    standing = standing_lines(report)
    if standing:
        out.append(f"<p>{html.escape(standing[0])}</p><ul>")
        out += [f"<li>{html.escape(line.removeprefix('- '))}</li>" for line in standing[1:]]
        out.append("</ul>")
    if report.decision:
        out.append(f"<p class='decide'><b>{html.escape(DECISION)}:</b> {html.escape(report.decision)}</p>")
    return "\n".join(out)


def plots(report: WorkloadReport) -> list[tuple[str, str | None]]:
    """(caption, PNG as base64) per plot the workload's results allow; (what it would show, None) where one point is
    all there is."""
    import matplotlib

    matplotlib.use("Agg")
    images = []
    spec = report.spec
    wanted = [spec.cost.metric] if spec.cost else []
    wanted += [m for m in report.columns if report.roles.get(m) in BESIDE_HEADLINE]
    for metric in dict.fromkeys(wanted):
        if any(metric in row.metrics for row in report.rows):
            images.append((f"{spec.name}: {metric}", _bars(report, metric)))
    if report.counts_flops:
        images.append((f"{spec.name}: achieved TFLOP/s against the datasheet peak", _flops_bars(report)))
    serving = serving_rows(report)
    if len(serving) == 1:
        row = serving[0]
        images.append((f"{spec.name}: throughput against per-user speed: one load level only ({row.label} "
                       f"{row.setup}: {row.metrics[SERVING_Y].median:.4g} output tokens/s at "
                       f"{row.metrics[SERVING_X].median:.4g} tokens/s per user), no curve to draw", None))
    elif serving:
        images.append((f"{spec.name}: throughput against per-user speed", _serving_curve(report)))
    lines = scaling_lines(report)
    if lines:
        images.append((f"{spec.name}: tokens/s and scaling efficiency against GPUs", _scaling_curves(report, lines)))
    return images


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _bars(report: WorkloadReport, metric: str) -> str:
    fig, ax, _ = _bar_axes(report, metric)
    ax.legend(fontsize=8)
    return _png(fig)


def _bar_axes(report: WorkloadReport, metric: str):
    """Bars of a metric per setup, one colour per GPU, error bars from min to max; also each GPU's colour."""
    import matplotlib.pyplot as plt

    rows = [row for row in report.rows if metric in row.metrics]
    gpus = list(dict.fromkeys(row.label for row in rows))
    setups = list(dict.fromkeys(row.setup for row in rows))
    width = 0.8 / max(len(gpus), 1)
    fig, ax = plt.subplots(figsize=(max(6, len(setups) * 1.1), 3.6))
    colors = {}
    for i, gpu in enumerate(gpus):
        xs, ys, low, high = [], [], [], []
        for j, setup in enumerate(setups):
            row = next((r for r in rows if r.label == gpu and r.setup == setup), None)
            if row is None:
                continue
            m = row.metrics[metric]
            xs.append(j + i * width)
            ys.append(m.median)
            low.append(m.median - m.min)
            high.append(m.max - m.median)
        bars = ax.bar(xs, ys, width, yerr=[low, high], capsize=3, label=gpu)
        colors[gpu] = bars.patches[0].get_facecolor()
    ax.set_xticks([j + width * (len(gpus) - 1) / 2 for j in range(len(setups))], setups, rotation=30, ha="right")
    unit = rows[0].metrics[metric].unit
    ax.set_ylabel(f"{metric} ({unit})")
    ax.set_title(f"{report.spec.name}: {metric}")
    return fig, ax, colors


def _flops_bars(report: WorkloadReport) -> str:
    """Achieved TFLOP/s per setup and GPU, each GPU's dense datasheet peak for the dtype drawn as a line."""
    fig, ax, colors = _bar_axes(report, flops.METRIC)
    peaks = {}  # one line per GPU class and dtype, in the colour of its first bars
    for row in report.rows:
        if flops.METRIC in row.metrics and (peak := datasheet_peak(row)):
            peaks.setdefault((row.gpu, row.dtype), (peak, colors[row.label]))
    for (gpu, dtype), (peak, color) in peaks.items():
        ax.axhline(peak, color=color, linestyle="--", linewidth=1,
                   label=f"{gpu} {flops.PEAK_DTYPES.get(dtype or '', dtype)} peak {peak:g}")
    ax.set_title(f"{report.spec.name}: achieved TFLOP/s against the dense datasheet peak")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    return _png(fig)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points that no other point beats on both axes (both higher is better), by x."""
    front = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(front)


def serving_rows(report: WorkloadReport) -> list[Row]:
    """The rows that are points of the serving trade-off: tokens/s per user and output tokens/s (per GPU)."""
    return [row for row in report.rows if SERVING_X in row.metrics and SERVING_Y in row.metrics]


def serving_curve_png(report: WorkloadReport) -> bytes:
    """The serving trade-off curve as PNG bytes, for a page that keeps its plots as files (the site)."""
    import matplotlib

    matplotlib.use("Agg")
    return base64.b64decode(_serving_curve(report))


def _serving_curve(report: WorkloadReport) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    all_points = []
    lines: dict[tuple[str, str], list[Row]] = {}
    for r in report.rows:
        if SERVING_X in r.metrics and SERVING_Y in r.metrics:
            lines.setdefault((r.label, LOAD_LEVEL.sub("", r.setup)), []).append(r)
    for (gpu, mode), rows in lines.items():
        points = [(r.metrics[SERVING_X].median, r.metrics[SERVING_Y].median) for r in rows]
        drawn = ax.plot(*zip(*sorted(points), strict=True), "o-", label=f"{gpu} {mode}".strip())
        missed = [p for r, p in zip(rows, points, strict=True) if "slo_met" in r.metrics
                  and r.metrics["slo_met"].median < 1]
        if missed:  # a level over the latency target: hollow
            ax.plot(*zip(*missed, strict=True), "o", markersize=9, markerfacecolor="white",
                    color=drawn[0].get_color())
        for r, (x, y) in zip(rows, points, strict=True):
            ax.annotate(r.setup, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        all_points += points
    front = pareto_front(all_points)
    ax.plot(*zip(*front, strict=True), "k--", linewidth=1, label="Pareto front")
    for target in report.targets:  # a user at the TPOT target sees 1000 / TPOT tokens/s: the points left of it miss
        ax.axvline(target.per_user_tokens_per_s, color="firebrick", linestyle=":", linewidth=1.2,
                   label=f"target: p99 TPOT {target.tpot_ms:g} ms ({target.per_user_tokens_per_s:g} tok/s/user),"
                         f" TTFT {target.ttft_ms:g} ms; hollow: missed")
    ax.set_xlabel("tokens/s per user")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{report.spec.name}: throughput against per-user speed")
    ax.legend(fontsize=8)
    return _png(fig)


def _scaling_curves(report: WorkloadReport, lines) -> str:
    return _png(scaling_figure(report, lines))


VARIANT_MARKERS = "sD^vP*Xph"


def scaling_figure(report: WorkloadReport, lines):
    """Tokens/s and scaling efficiency against GPU count: one line per GPU type and model size (the plain recipe),
    each fix (compression, accumulation) a marker of its own named in the legend, and linear scaling from 1 GPU as
    the reference. No text sits on the points: labels there overlapped and ran off the axes."""
    import matplotlib.pyplot as plt

    fig, (rate, efficiency) = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    counts = sorted({p.gpus for line in lines for p in line.plain + line.variants})
    variants = list(dict.fromkeys(p.row.setup for line in lines for p in line.variants))
    for line in lines:
        label = f"{line.gpu} {line.size}"
        color = None
        for ax, metric in ((rate, "tokens_per_s"), (efficiency, "scaling_efficiency_pct")):
            plain = [p for p in line.plain if metric in p.row.metrics]
            if plain:
                drawn = ax.errorbar(*_with_spread(plain, metric), fmt="o-", capsize=3, label=label, color=color)
                color = drawn.lines[0].get_color()
            for point in (p for p in line.variants if metric in p.row.metrics):
                marker = VARIANT_MARKERS[variants.index(point.row.setup) % len(VARIANT_MARKERS)]
                drawn = ax.errorbar(*_with_spread([point], metric), fmt=marker, capsize=3, color=color,
                                    markersize=7, label=f"{line.gpu} {point.row.setup}")
                color = color or drawn.lines[0].get_color()
        ideal = [(n, y) for n in counts if (y := line.ideal(n))]
        if ideal:
            rate.plot(*zip(*ideal, strict=True), ":", color=color, linewidth=1)
    rate.plot([], [], ":", color="grey", label="linear from 1 GPU (ideal)")  # one legend entry for all of them
    efficiency.axhline(100, color="grey", linestyle=":", linewidth=1, label="linear (ideal)")
    for ax, ylabel in ((rate, "tokens/s (all GPUs)"), (efficiency, "scaling efficiency (%)")):
        ax.set_xticks(counts)
        ax.set_xlim(min(counts) - 0.5, max(counts) + 0.5)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(ylabel)
    rate.set_title("tokens/s against GPUs", fontsize=10)
    efficiency.set_title("scaling efficiency against GPUs", fontsize=10)
    efficiency.legend(*rate.get_legend_handles_labels(), fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle(f"{report.spec.name}: scaling over GPUs")
    return fig


def _with_spread(points, metric: str):
    """x, y and [below, above] error bars (min to max over repeats) for errorbar()."""
    ms = [p.row.metrics[metric] for p in points]
    return [p.gpus for p in points], [m.median for m in ms], [[m.median - m.min for m in ms],
                                                              [m.max - m.median for m in ms]]
