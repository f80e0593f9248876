"""Print the peer check's two clients side by side (benchmarks/serving_peer_check.sh writes the folder).

    python benchmarks/serving_peer_table.py FOLDER

For each level (users) and client, the mean over the rounds of: output tokens/s, TTFT p50/p99, TPOT p50, E2E
p50, and the busiest client process's share of a core over the timed load (gpubench: its client_cpu_pct;
vLLM's client: its process tree sampled by client_cpu.py, over the `duration` seconds before its result was
saved). Then gpubench / vLLM per figure, marked ok within TOLERANCE (issue 23's target), and the noise: the
largest spread (max - min) / mean of one client's figure over its rounds, so a gap can be read against how much
one client differs from itself. A p99 over fewer than 1,000 requests is shown with its count. Exit 1 when a round
is missing or a figure is out of tolerance.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

TOLERANCE = 0.03
P99_MIN_REQUESTS = 1000
FIGURES = (  # label, vLLM's result key, gpubench's metric, formatting
    ("output tok/s", "output_throughput", "output_tokens_per_s", "{:,.0f}"),
    ("TTFT p50 ms", "median_ttft_ms", "ttft_ms_p50", "{:,.1f}"),
    ("TTFT mean ms", "mean_ttft_ms", "ttft_ms_mean", "{:,.1f}"),
    ("TTFT p99 ms", "p99_ttft_ms", "ttft_ms_p99", "{:,.1f}"),
    ("TPOT p50 ms", "median_tpot_ms", "tpot_ms_p50", "{:.2f}"),
    ("E2E p50 ms", "median_e2el_ms", "e2e_ms_p50", "{:,.0f}"),
)
NAME = re.compile(r"(vllm|gpubench)-u(\d+)-r(\d+)\.(json|jsonl)$")


def vllm_cpu_pct(series_path: Path, result: dict) -> float | None:
    """The busiest process's CPU share (% of a core) in the load's window: `duration` s before `date`."""
    if not series_path.exists():
        return None
    series = json.loads(series_path.read_text())["samples"]
    end = datetime.strptime(result["date"], "%Y%m%d-%H%M%S").timestamp() + 1.0  # the stamp is whole seconds
    start = end - result["duration"]
    # the samples around the window: the last before it starts and the first after it ends (a short load may fall
    # between two samples)
    before = [(t, row) for t, row in series if t <= start] or series[:1]
    after = [(t, row) for t, row in series if t >= end] or series[-1:]
    (t0, first), (t1, last) = before[-1], after[0]
    if t1 <= t0:
        return None
    shares = [(last[pid] - first.get(pid, 0.0)) / (t1 - t0) for pid in last]
    return 100.0 * max(shares) if shares else None


def gpubench_metrics(path: Path) -> dict[str, float] | None:
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "result" and record.get("status") == "ok":
            return {name: m["value"] for name, m in record["metrics"].items()}
    return None


def rounds(folder: Path) -> dict[int, dict[str, list[dict[str, float]]]]:
    """{users: {client: [figures of each round]}}."""
    out: dict[int, dict[str, list[dict[str, float]]]] = {}
    for path in sorted(folder.iterdir()):
        match = NAME.match(path.name)
        if not match or path.name.endswith(".cpu.json"):
            continue
        client, users = match.group(1), int(match.group(2))
        if client == "vllm":
            result = json.loads(path.read_text())
            figures = {label: result.get(key) for label, key, _, _ in FIGURES}
            figures["requests"] = result.get("completed")
            figures["client CPU %"] = vllm_cpu_pct(path.with_suffix(".cpu.json"), result)
        else:
            metrics = gpubench_metrics(path)
            if metrics is None:
                continue
            figures = {label: metrics.get(key) for label, _, key, _ in FIGURES}
            figures["requests"] = metrics.get("requests_ok")
            figures["client CPU %"] = metrics.get("client_cpu_pct")
        out.setdefault(users, {}).setdefault(client, []).append(figures)
    return out


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def spread(values) -> float | None:
    values = [v for v in values if v is not None]
    return (max(values) - min(values)) / statistics.fmean(values) if len(values) > 1 and any(values) else None


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    table = rounds(folder)
    if not table:
        print(f"no results in {folder}")
        return 1
    bad = 0
    header = f"{'users':>5} {'figure':<14} {'vllm bench':>12} {'gpubench':>12} {'ratio':>7}      {'noise':>6}"
    print(header)
    print("-" * len(header))
    for users in sorted(table):
        clients = table[users]
        vllm, ours = clients.get("vllm", []), clients.get("gpubench", [])
        if not vllm or not ours or len(vllm) != len(ours):
            print(f"{users:>5} rounds: vllm bench {len(vllm)}, gpubench {len(ours)} (a round is missing)")
            bad += 1
        requests = int(mean(r["requests"] for r in vllm + ours) or 0)
        for label, _, _, fmt in FIGURES:
            a, b = mean(r[label] for r in vllm), mean(r[label] for r in ours)
            note = ""
            if "p99" in label and requests < P99_MIN_REQUESTS:
                note = f"  (p99 of {requests} requests)"
            if a is None or b is None:
                print(f"{users:>5} {label:<14} {'-' if a is None else fmt.format(a):>12}"
                      f" {'-' if b is None else fmt.format(b):>12} {'-':>7}{note}")
                bad += 1
                continue
            ratio = b / a if a else float("nan")
            ok = abs(ratio - 1) <= TOLERANCE
            bad += not ok
            noise = max((x for x in (spread(r[label] for r in vllm), spread(r[label] for r in ours)) if x is not None),
                        default=None)
            print(f"{users:>5} {label:<14} {fmt.format(a):>12} {fmt.format(b):>12} {ratio:>7.3f}"
                  f" {'ok ' if ok else 'OFF'}  {'-' if noise is None else f'{noise:.1%}':>6}{note}")
        a, b = mean(r["client CPU %"] for r in vllm), mean(r["client CPU %"] for r in ours)
        print(f"{users:>5} {'client CPU %':<14} {'-' if a is None else f'{a:.0f}':>12}"
              f" {'-' if b is None else f'{b:.0f}':>12}   (busiest client process, % of a core)")
    print(f"\n{'all within' if not bad else f'{bad} figures outside'} {TOLERANCE:.0%} of vLLM's client"
          f" ({len(next(iter(table.values())).get('vllm', []))} rounds a level)")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
