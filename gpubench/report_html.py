"""The report as one HTML page with its plots embedded (PNG, base64), so it opens with no network.

Per workload: its table, then bars of throughput (the cost basis metric), cost per unit of output and
peak memory per GPU and setup, error bars from min to max over repeats; for serving workloads, the
trade-off curve of output tokens/s per GPU against tokens/s per user across load levels, with its
Pareto front (the points no other point beats on both).
"""

from __future__ import annotations

import base64
import html
import io
import re

from gpubench.report import Row, WorkloadReport, markdown

SERVING_X, SERVING_Y = "per_user_tokens_per_s", "output_tokens_per_s"
LOAD_LEVEL = re.compile(r"-?[cu]\d+$")  # c64, bf16-c64, ollama-q4km-u16: one line per server mode


def render(reports: list[WorkloadReport], title: str = "gpubench report") -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
             "td:nth-child(-n+4),th{text-align:left}img{max-width:100%;margin:1em 0}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    for report in reports:
        parts.append(_table_html(report))
        for image in plots(report):
            parts.append(f"<img alt='plot' src='data:image/png;base64,{image}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _table_html(report: WorkloadReport) -> str:
    lines = markdown([report]).splitlines()
    out = [f"<h2>{html.escape(lines[0].lstrip('# '))}</h2>", f"<p>{html.escape(lines[2])}</p>", "<table>"]
    for i, line in enumerate(line for line in lines[4:] if line.startswith("|")):
        if i == 1:
            continue  # the markdown separator row
        tag = "th" if i == 0 else "td"
        cells = [c.strip() for c in line.strip("|").split("|")]
        out.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>")
    return "\n".join([*out, "</table>"])


def plots(report: WorkloadReport) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    images = []
    spec = report.spec
    wanted = [spec.cost.metric] if spec.cost else []
    wanted += [m for m in report.columns if m.startswith("usd_per_") or "peak" in m]
    for metric in dict.fromkeys(wanted):
        if any(metric in row.metrics for row in report.rows):
            images.append(_bars(report, metric))
    if any(SERVING_X in row.metrics and SERVING_Y in row.metrics for row in report.rows):
        images.append(_serving_curve(report))
    return images


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _bars(report: WorkloadReport, metric: str) -> str:
    import matplotlib.pyplot as plt

    rows = [row for row in report.rows if metric in row.metrics]
    gpus = list(dict.fromkeys(row.gpu for row in rows))
    setups = list(dict.fromkeys(row.setup for row in rows))
    width = 0.8 / max(len(gpus), 1)
    fig, ax = plt.subplots(figsize=(max(6, len(setups) * 1.1), 3.6))
    for i, gpu in enumerate(gpus):
        xs, ys, low, high = [], [], [], []
        for j, setup in enumerate(setups):
            row = next((r for r in rows if r.gpu == gpu and r.setup == setup), None)
            if row is None:
                continue
            m = row.metrics[metric]
            xs.append(j + i * width)
            ys.append(m.median)
            low.append(m.median - m.min)
            high.append(m.max - m.median)
        ax.bar(xs, ys, width, yerr=[low, high], capsize=3, label=gpu)
    ax.set_xticks([j + width * (len(gpus) - 1) / 2 for j in range(len(setups))], setups, rotation=30, ha="right")
    unit = rows[0].metrics[metric].unit
    ax.set_ylabel(f"{metric} ({unit})")
    ax.set_title(f"{report.spec.name}: {metric}")
    ax.legend(fontsize=8)
    return _png(fig)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points that no other point beats on both axes (both higher is better), by x."""
    front = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(front)


def _serving_curve(report: WorkloadReport) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    all_points = []
    lines: dict[tuple[str, str], list[Row]] = {}
    for r in report.rows:
        if SERVING_X in r.metrics and SERVING_Y in r.metrics:
            lines.setdefault((r.gpu, LOAD_LEVEL.sub("", r.setup)), []).append(r)
    for (gpu, mode), rows in lines.items():
        points = [(r.metrics[SERVING_X].median, r.metrics[SERVING_Y].median) for r in rows]
        ax.plot(*zip(*sorted(points), strict=True), "o-", label=f"{gpu} {mode}".strip())
        for r, (x, y) in zip(rows, points, strict=True):
            ax.annotate(r.setup, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        all_points += points
    front = pareto_front(all_points)
    ax.plot(*zip(*front, strict=True), "k--", linewidth=1, label="Pareto front")
    ax.set_xlabel("tokens/s per user")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{report.spec.name}: throughput against per-user speed")
    ax.legend(fontsize=8)
    return _png(fig)
