"""Print the peer check's two clients side by side (benchmarks/serving_peer_check.sh writes the folder).

    python benchmarks/serving_peer_table.py FOLDER [FOLDER ...]

For each closed-loop level (users) and client, the mean over the rounds of: output tokens/s, TTFT p50/mean/p99, TPOT
p50, the gap between chunks p50 (vLLM's client's ITL: one per chunk, whatever it carries), E2E p50. Then gpubench / vLLM
per figure, marked ok within TOLERANCE (issue 23's target), and the noise: the largest spread (max - min) / mean of one
client's figure over its rounds, so a gap can be read against how much one client differs from itself. A p99 over fewer
than 1,000 requests is shown with its count. Below each level, what says whether the server was given the load asked,
for each client: the busiest client process's share of a core over the timed load (gpubench: its client_cpu_pct; vLLM's
client: its process tree sampled by client_cpu.py, over the `duration` seconds before its result was saved), the client
tree's peak memory (client_cpu.py), the requests it held in flight (Little's law: requests/s x mean E2E), and the
server's own gauges of requests running and waiting over the timed load (gpubench records them itself;
server_gauges_log.py logs them through vLLM's client's run), and the server's CPU over each client's run: its API
process's share of a core and CPU time per 1k tokens streamed, which shows whether one client's requests cost the server
more work (gpubench's per-chunk token ids, say), and its engine core's share (it loops without pause while it has
requests and spins on the GPU's syncs, so well under 100% under load means it waited for requests). A level where vLLM's
client passed client_saturated of a core (AIPerf's 85%) is marked: there vLLM's client is the limit, and its figures are
shown but not held to the tolerance. So is a level whose two runs are not alike (neq): one client ran more than
UNEQUAL_X times the other's requests, or fewer than WAVES_MIN a user. With every answer the same length a closed loop
moves in waves of `users` requests that start and end together (the server's gauges show it), and a run's first wave and
drain weigh one wave in its requests / users: two runs of different lengths measure different mixes. An open loop (files
named -r{rate}-) gets the asked and achieved rates and gpubench's schedule delay p99, against issue 33's target (within
1%, under 1 ms). Exit 1 when a round is missing or a held figure is out of tolerance. Several folders pool their rounds
(the calls of one hold).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

TOLERANCE = 0.03
P99_MIN_REQUESTS = 1000
CLIENT_SATURATED_PCT = 85.0  # data/verdict_thresholds.csv's client_saturated (AIPerf's rule)
UNEQUAL_X = 1.5  # one client's requests over the other's, past which a level's runs are not alike
WAVES_MIN = 4  # requests a user, below which a run is mostly its first wave and its drain
FIGURES = (  # label, vLLM's result key, gpubench's metric, formatting
    ("output tok/s", "output_throughput", "output_tokens_per_s", "{:,.0f}"),
    ("TTFT p50 ms", "median_ttft_ms", "ttft_ms_p50", "{:,.1f}"),
    ("TTFT mean ms", "mean_ttft_ms", "ttft_ms_mean", "{:,.1f}"),
    ("TTFT p99 ms", "p99_ttft_ms", "ttft_ms_p99", "{:,.1f}"),
    ("TPOT p50 ms", "median_tpot_ms", "tpot_ms_p50", "{:.2f}"),
    ("chunk gap p50", "median_itl_ms", "chunk_gap_ms_p50", "{:.2f}"),
    ("E2E p50 ms", "median_e2el_ms", "e2e_ms_p50", "{:,.0f}"),
)
LOAD = ("requests", "client CPU %", "client MiB", "in flight", "server running", "server waiting", "API CPU %",
        "API ms/1k tok", "engine CPU %")
# a run's file: client, its variant (+WAY, +gpubench-prompts: not in the peer table), u or r, level, round
NAME = re.compile(r"(vllm|gpubench)(\+[\w-]+)?-([ur])(\d+)-r(\d+)\.(json|jsonl)$")


def window(result: dict) -> tuple[float, float]:
    """vLLM's client's timed load, unix seconds: `duration` s before `date` (a stamp of whole seconds)."""
    end = datetime.strptime(result["date"], "%Y%m%d-%H%M%S").timestamp() + 1.0
    return end - result["duration"], end


def vllm_window(result: dict) -> tuple[int, float, float]:
    """(clock column of server_gauges_log.py's samples, start, end) of vLLM's client's timed load: 1 (monotonic) from
    its requests' own start and end times (perf_counter) where the result is detailed, else 0 (unix) from `date` and
    `duration`."""
    starts, latencies = result.get("start_times"), result.get("latencies")
    if starts and latencies:
        return 1, min(starts), max(s + lat for s, lat in zip(starts, latencies, strict=True))
    return 0, *window(result)


def vllm_cpu_pct(series: dict, start: float, end: float) -> float | None:
    """The busiest process's CPU share (% of a core) in the window."""
    samples = series["samples"]
    # the samples around the window: the last before it starts and the first after it ends (a short load may fall
    # between two samples)
    before = [(t, row) for t, row in samples if t <= start] or samples[:1]
    after = [(t, row) for t, row in samples if t >= end] or samples[-1:]
    (t0, first), (t1, last) = before[-1], after[0]
    if t1 <= t0:
        return None
    shares = [(last[pid] - first.get(pid, 0.0)) / (t1 - t0) for pid in last]
    return 100.0 * max(shares) if shares else None


def peak_mib(series: dict) -> float | None:
    return max((b for _, b in series.get("rss", [])), default=0) / 2**20 or None


def gauges_mean(path: Path, result: dict) -> tuple[float | None, float | None]:
    """The logged gauges' means over vLLM's client's timed window: from its requests' own start and end times
    (perf_counter: the logger's monotonic clock) where the result is detailed, else from `date` and `duration`."""
    if not path.exists():
        return None, None
    clock, start, end = vllm_window(result)
    inside = [s for s in json.loads(path.read_text())["samples"] if start <= s[clock] <= end]
    if not inside:
        return None, None
    return statistics.fmean(s[-2] for s in inside), statistics.fmean(s[-1] for s in inside)


def server_api_cpu(path: Path) -> dict[str, float | None]:
    """The server's CPU over the client's whole run (warm-up included; serving_peer_check.sh reads /proc before and
    after): its API process's share of a core and CPU time per 1k tokens streamed, and its engine core's share."""
    try:
        run = json.loads(path.read_text())
    except FileNotFoundError:
        return {"API CPU %": None, "API ms/1k tok": None, "engine CPU %": None}
    def share(cpu_s: float | None) -> float | None:
        return 100 * cpu_s / run["wall_s"] if cpu_s is not None and run["wall_s"] else None

    return {"API CPU %": share(run["api_cpu_s"]),
            "API ms/1k tok": 1e6 * run["api_cpu_s"] / run["tokens"] if run["tokens"] else None,
            "engine CPU %": share(run.get("engine_cpu_s"))}


def gpubench_metrics(path: Path) -> dict[str, float] | None:
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "result" and record.get("status") == "ok":
            return {name: m["value"] for name, m in record["metrics"].items()}
    return None


def vllm_figures(path: Path) -> dict:
    result = json.loads(path.read_text())
    figures = {label: result.get(key) for label, key, _, _ in FIGURES}
    start, end = window(result)
    series_path = path.with_suffix(".cpu.json")
    series = json.loads(series_path.read_text()) if series_path.exists() else None
    running, waiting = gauges_mean(path.with_suffix(".gauges.json"), result)
    throughput, e2e = result.get("request_throughput"), result.get("mean_e2el_ms")
    figures.update({"requests": result.get("completed"),
                    "client CPU %": vllm_cpu_pct(series, start, end) if series else None,
                    "client MiB": peak_mib(series) if series else None,
                    "in flight": throughput * e2e / 1e3 if throughput and e2e else None,
                    "server running": running, "server waiting": waiting,
                    "achieved rate": throughput, "schedule delay p99 ms": None,
                    **server_api_cpu(path.with_suffix(".server.json"))})
    return figures


def gpubench_figures(path: Path) -> dict | None:
    metrics = gpubench_metrics(path)
    if metrics is None:
        return None
    series_path = path.with_suffix(".cpu.json")
    series = json.loads(series_path.read_text()) if series_path.exists() else None
    figures = {label: metrics.get(key) for label, _, key, _ in FIGURES}
    figures.update({"requests": metrics.get("requests_ok"), "client CPU %": metrics.get("client_cpu_pct"),
                    "client MiB": (peak_mib(series) if series else None) or metrics.get("client_rss_mib"),
                    "in flight": metrics.get("client_in_flight_mean"),
                    "server running": metrics.get("server_running_mean"),
                    "server waiting": metrics.get("server_waiting_mean"),
                    "achieved rate": metrics.get("achieved_rate"),
                    "schedule delay p99 ms": metrics.get("schedule_delay_ms_p99"),
                    **server_api_cpu(path.with_suffix(".server.json"))})
    return figures


def rounds(folders: list[Path]) -> dict[tuple[str, int], dict[str, list[dict]]]:
    """{(u or r, users or rate): {client: [figures of each round]}}."""
    out: dict[tuple[str, int], dict[str, list[dict]]] = {}
    for folder in folders:
        for path in sorted(folder.iterdir()):
            match = NAME.match(path.name)
            if not match or match.group(2):
                continue
            client, level = match.group(1), (match.group(3), int(match.group(4)))
            figures = vllm_figures(path) if client == "vllm" else gpubench_figures(path)
            if figures is not None:
                out.setdefault(level, {}).setdefault(client, []).append(figures)
    return out


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def spread(values) -> float | None:
    values = [v for v in values if v is not None]
    return (max(values) - min(values)) / statistics.fmean(values) if len(values) > 1 and any(values) else None


def show(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def closed_level(users: int, vllm: list[dict], ours: list[dict]) -> int:
    """Print one closed-loop level; the number of held figures out of tolerance (or missing)."""
    bad = 0
    if not vllm or not ours or len(vllm) != len(ours):
        print(f"{users:>5} rounds: vllm bench {len(vllm)}, gpubench {len(ours)} (a round is missing)")
        bad += 1
    saturated = (mean(r["client CPU %"] for r in vllm) or 0) > CLIENT_SATURATED_PCT
    unlike = unlike_runs(users, mean(r["requests"] for r in vllm), mean(r["requests"] for r in ours))
    held = not saturated and not unlike
    requests = int(mean(r["requests"] for r in vllm + ours) or 0)
    for label, _, _, fmt in FIGURES:
        a, b = mean(r[label] for r in vllm), mean(r[label] for r in ours)
        note = f"  (p99 of {requests} requests)" if "p99" in label and requests < P99_MIN_REQUESTS else ""
        if a is None or b is None:
            print(f"{users:>5} {label:<14} {show(a, fmt):>12} {show(b, fmt):>12} {'-':>7}{note}")
            bad += held
            continue
        ratio = b / a if a else float("nan")
        ok = abs(ratio - 1) <= TOLERANCE
        mark = "sat" if saturated else "neq" if unlike else ("ok " if ok else "OFF")
        bad += not ok and held
        noise = max((x for x in (spread(r[label] for r in vllm), spread(r[label] for r in ours)) if x is not None),
                    default=None)
        print(f"{users:>5} {label:<14} {fmt.format(a):>12} {fmt.format(b):>12} {ratio:>7.3f}"
              f" {mark}  {'-' if noise is None else f'{noise:.1%}':>6}{note}")
    formats = ("{:,.0f}", "{:.0f}", "{:,.0f}", "{:,.1f}", "{:,.1f}", "{:,.1f}", "{:.0f}", "{:.1f}", "{:.0f}")
    for label, fmt in zip(LOAD, formats, strict=True):
        a, b = mean(r[label] for r in vllm), mean(r[label] for r in ours)
        print(f"{users:>5} {label:<14} {show(a, fmt):>12} {show(b, fmt):>12}")
    if saturated:
        print(f"{users:>5} vLLM's client passed {CLIENT_SATURATED_PCT:.0f}% of a core: it is the limit here (sat),"
              " so its figures are not held to the tolerance")
    if unlike:
        print(f"{users:>5} the runs are not alike (neq): {unlike}; not held to the tolerance")
    return bad


def unlike_runs(users: int, vllm_requests: float | None, our_requests: float | None) -> str | None:
    """Why one level's two runs can't be held against each other, or None when they can."""
    if not vllm_requests or not our_requests:
        return None
    if max(vllm_requests, our_requests) > UNEQUAL_X * min(vllm_requests, our_requests):
        return f"{vllm_requests:,.0f} requests against {our_requests:,.0f}"
    if min(vllm_requests, our_requests) < WAVES_MIN * users:
        return f"{min(vllm_requests, our_requests):,.0f} requests at {users} users, fewer than {WAVES_MIN} a user"
    return None


def open_level(rate: int, vllm: list[dict], ours: list[dict]) -> int:
    a, b = mean(r["achieved rate"] for r in vllm), mean(r["achieved rate"] for r in ours)
    delay = mean(r["schedule delay p99 ms"] for r in ours)
    print(f"r{rate:<4} achieved rate  {show(a, '{:,.2f}'):>12} {show(b, '{:,.2f}'):>12}   (asked {rate}/s;"
          " vLLM's client: completed requests over its run)")
    for label in ("output tok/s", "TTFT p50 ms", "E2E p50 ms"):
        fmt = next(f for name, _, _, f in FIGURES if name == label)
        print(f"r{rate:<4} {label:<14} {show(mean(r[label] for r in vllm), fmt):>12}"
              f" {show(mean(r[label] for r in ours), fmt):>12}")
    rate_ok = b is not None and abs(b / rate - 1) <= 0.01
    delay_ok = delay is not None and delay < 1.0
    print(f"r{rate:<4} gpubench: achieved within 1% of asked {'PASS' if rate_ok else 'FAIL'};"
          f" schedule delay p99 {show(delay, '{:.3f}')} ms < 1 ms {'PASS' if delay_ok else 'FAIL'}")
    return (not rate_ok) + (not delay_ok)


def timed_window(path: Path) -> tuple[int, float, float] | None:
    """(clock column, start, end) of a run's timed load: vLLM's client's (vllm_window), or gpubench's
    timed_window_unix (0, the wall clock)."""
    if path.suffix == ".json":
        result = json.loads(path.read_text())
        detailed = result.get("start_times") and result.get("latencies")
        timed = detailed or (result.get("date") and result.get("duration"))
        return vllm_window(result) if timed else None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "result" and (span := (record.get("info") or {}).get("timed_window_unix")):
            return 0, span[0], span[1]
    return None


def server_view(path: Path) -> dict[str, float | None] | None:
    """What the server itself counted over one client's timed window (server_gauges_log.py's counters): output
    tokens/s, prompt tokens a request, engine steps/s, tokens a step, preemptions and the prefix cache's hit share.
    The samples inside the window, first to last: it loses up to one interval at each end, the same for every client.
    A prompt is counted when its request is taken in and a request when it ends, so prompt tokens a request is the
    prompt length give or take the requests in flight at the window's edges (64.4 for prompts of 64 on the CPU)."""
    log, span = path.with_suffix(".gauges.json"), timed_window(path)
    if not log.exists() or span is None:
        return None
    data = json.loads(log.read_text())
    clock, start, end = span
    inside = [row for row in data.get("counters", []) if start <= row[clock] <= end]
    if len(inside) < 2:
        return None
    names = data["counter_names"]
    first, last = dict(zip(names, inside[0][2:], strict=True)), dict(zip(names, inside[-1][2:], strict=True))
    seconds = inside[-1][1] - inside[0][1]

    def delta(name: str) -> float | None:
        a, b = first.get(name), last.get(name)
        return b - a if a is not None and b is not None else None

    def ratio(a: float | None, b: float | None, scale: float = 1.0) -> float | None:
        return scale * a / b if a is not None and b else None

    steps = delta("vllm:iteration_tokens_total_count")
    # the window on the wall clock (the log's samples carry both clocks), for the GPU's log
    unix_start, unix_end = (start, end) if clock == 0 else (inside[0][0] + start - inside[0][1],
                                                            inside[0][0] + end - inside[0][1])
    return {"server tok/s": ratio(delta("vllm:generation_tokens"), seconds),
            "prompt tok/req": ratio(delta("vllm:prompt_tokens"), delta("vllm:request_success")),
            "steps/s": ratio(steps, seconds), "tokens/step": ratio(delta("vllm:iteration_tokens_total_sum"), steps),
            "preemptions": delta("vllm:num_preemptions"),
            "prefix hit %": ratio(delta("vllm:prefix_cache_hits"), delta("vllm:prefix_cache_queries"), 100.0),
            **gpu_means(path.with_suffix(".gpu.csv"), unix_start, unix_end)}


def gpu_means(path: Path, start: float, end: float) -> dict[str, float | None]:
    """The GPU's mean SM clock (MHz), power (W) and temperature (C) over a window, from the nvidia-smi log the check
    keeps beside each run (UTC stamps, then the figures)."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            fields = [f.strip() for f in line.split(",")]
            try:
                at = datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
                rows.append((at, float(fields[1]), float(fields[2]), float(fields[3])))
            except (ValueError, IndexError):
                continue  # a line cut by the stop, or "[N/A]"
    inside = [row for row in rows if start <= row[0] <= end]
    return {"SM MHz": mean(r[1] for r in inside), "GPU W": mean(r[2] for r in inside),
            "GPU C": mean(r[3] for r in inside)}


def print_server_view(folders: list[Path]) -> None:
    """Every run, each client's own output tokens/s beside the server's count over the same seconds."""
    rows = []
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if (match := NAME.match(path.name)) and (view := server_view(path)) is not None:
                client = match.group(1) + (match.group(2) or "")
                figures = vllm_figures(path) if path.suffix == ".json" else gpubench_figures(path)
                own = figures.get("output tok/s") if figures else None
                rows.append((match.group(3), int(match.group(4)), client, int(match.group(5)), own, view))
    if not rows:
        return
    print("\nthe server's own count over each client's timed window (vLLM's /metrics counters)")
    print(f"{'load':>6} {'client':<24} {'round':>5} {'client tok/s':>12} {'server tok/s':>12} {'prompt/req':>10}"
          f" {'steps/s':>8} {'tok/step':>8} {'preempt':>7} {'prefix hit':>10} {'SM MHz':>7} {'GPU W':>6} {'GPU C':>5}")
    for kind, level, client, rnd, own, view in sorted(rows, key=lambda r: (r[0] != "u", r[1], r[3], r[2])):
        print(f"{kind}{level:>5} {client:<24} {rnd:>5} {show(own, '{:,.0f}'):>12}"
              f" {show(view['server tok/s'], '{:,.0f}'):>12} {show(view['prompt tok/req'], '{:.1f}'):>10}"
              f" {show(view['steps/s'], '{:.2f}'):>8} {show(view['tokens/step'], '{:,.0f}'):>8}"
              f" {show(view['preemptions'], '{:.0f}'):>7} {show(view['prefix hit %'], '{:.1f}%'):>10}"
              f" {show(view['SM MHz'], '{:,.0f}'):>7} {show(view['GPU W'], '{:.0f}'):>6}"
              f" {show(view['GPU C'], '{:.0f}'):>5}")


def main() -> int:
    folders = [Path(arg) for arg in sys.argv[1:]] or [Path(".")]
    table = rounds(folders)
    if not table:
        print(f"no results in {', '.join(map(str, folders))}")
        return 1
    bad = 0
    header = f"{'users':>5} {'figure':<14} {'vllm bench':>12} {'gpubench':>12} {'ratio':>7}      {'noise':>6}"
    print(header)
    print("-" * len(header))
    for kind, level in sorted(table, key=lambda k: (k[0] != "u", k[1])):  # closed loops first
        clients = table[(kind, level)]
        vllm, ours = clients.get("vllm", []), clients.get("gpubench", [])
        bad += closed_level(level, vllm, ours) if kind == "u" else open_level(level, vllm, ours)
    print(f"\n{'all held figures within' if not bad else f'{bad} figures outside'} {TOLERANCE:.0%} of vLLM's client"
          " where it was not saturated (open loop: issue 33's targets)")
    print_server_view(folders)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
