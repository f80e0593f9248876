"""The probe table of every search result in records files (a run's results.jsonl, or a run's stdout): one line for
the answer and its figures, then one row per probe, as Markdown.

    python3 benchmarks/search_table.py RUN_FOLDER_OR_JSONL...

Reads the records as JSON (no gpubench import), so it runs wherever python3 does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FIGURES = [("slo_max_rate", "rate found", "{:.2f}/s"), ("slo_max_users", "users found", "{:.0f}"),
           ("slo_search_bracket_pct", "bracket", "{:.1f}%"), ("slo_search_probes", "loads", "{:.0f}"),
           ("achieved_rate", "achieved", "{:.2f}/s"), ("ttft_ms_p99", "TTFT p99", "{:,.0f} ms"),
           ("tpot_ms_p99", "TPOT p99", "{:.1f} ms"), ("goodput_tokens_per_s", "goodput", "{:,.0f} tokens/s"),
           ("output_tokens_per_s", "output", "{:,.0f} tokens/s"), ("usd_per_1M_output_tokens", "$", "{:.3f}/1M tokens"),
           ("j_per_1M_output_tokens", "J", "{:,.0f}/1M tokens"), ("p99_requests", "p99 of", "{:,.0f} requests")]
COLUMNS = ["probe", "value", "met", "requests_ok", "ttft_ms_p99", "tpot_ms_p99", "goodput_tokens_per_s",
           "output_tokens_per_s", "achieved_rate", "seconds"]


def records(path: Path):
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    for file in files:
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("kind") == "result":
                yield file, record


def table(file: Path, result: dict) -> str:
    search = result.get("info", {}).get("search")
    metrics = {name: m["value"] for name, m in result.get("metrics", {}).items()}
    verdict = (result.get("verdict") or {}).get("label", "")
    figures = ", ".join(f"{label} {fmt.format(metrics[name])}" for name, label, fmt in FIGURES if name in metrics)
    lines = [f"## {result['setup']} ({result['status']}) in {file}", "",
             f"{search['target']}; tolerance {search['tolerance_pct']:g}%, {search['requests_per_probe']:,} requests a"
             f" probe; {search['stopped']}", "", f"Result: {figures}" + (f"; verdict {verdict}" if verdict else ""),
             "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    variable = search["variable"]
    for row in search["probes"]:
        value = row.get(variable)
        cells = {**row, "value": f"{value} (saturation)" if row.get("saturation") else value}
        lines.append("| " + " | ".join("" if cells.get(c) is None else str(cells.get(c)) for c in COLUMNS) + " |")
    if result.get("error"):
        lines += ["", f"error: {result['error']}"]
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    seen = 0
    for path in paths:
        for file, result in records(Path(path)):
            if (result.get("info") or {}).get("search"):
                print(table(file, result) + "\n")
                seen += 1
    if not seen:
        print("no search result in " + ", ".join(paths))
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
