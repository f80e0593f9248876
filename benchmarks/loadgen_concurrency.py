"""How many of a closed loop's users does the server really hold? Each client against the tests' server of known timing.

A closed loop of N users asks the server to hold N requests at every moment of the timed phase. The server here
(tests/streaming_server.py) logs how many requests it is streaming and holding in its queue at every change, on the
clock the clients time their requests with (CLOCK_MONOTONIC), so the held count can be read over exactly each
client's timed window: from its first timed request sent to its last one finished. Each client runs against a
fresh server at each level; with --keep-alive-s 5 and --backlog 2048 the server closes idle connections and
queues connections as vLLM's uvicorn does.

    .venv/bin/python benchmarks/loadgen_concurrency.py --users 1024 --processes 4 [--vllm-python .venv-vllm/bin/python]

Printed per client: the time-weighted mean of requests the server held over the window (and as a share of N), the
share of the window it held N, the seconds until it first held N; the same two from the client's own records (sent
and not finished: a gap between the two is the server's intake, not the client); the connections the server
accepted, those it accepted inside the timed window (a client reconnecting while timing) and those it closed for
idleness; and the client's throughput.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import streaming_server  # noqa: E402

from gpubench.loadgen.run import run_load  # noqa: E402
from gpubench.loadgen.spec import LoadSpec  # noqa: E402

VLLM_BENCH = HERE / "vllm_bench_serve.py"


def held(timeline: list, start: float, end: float, users: int) -> dict:
    """Time-weighted mean of requests held (streaming + waiting) over [start, end], the share of that time at
    `users` or more, and when the count first reached `users`."""
    area = at_full = 0.0
    first_full = None
    count = 0
    last = start
    for t, streaming, waiting in timeline:
        if t > end:
            break
        if t > last:
            area += count * (t - last)
            at_full += (t - last) if count >= users else 0.0
            last = t
        count = streaming + waiting
        if t >= start and first_full is None and count >= users:
            first_full = t - start
    if end > last:
        area += count * (end - last)
        at_full += (end - last) if count >= users else 0.0
    span = end - start
    return {"mean": area / span, "full_share": at_full / span, "first_full_s": first_full}


def slices(timeline: list, start: float, end: float, parts: int) -> list[float]:
    """The time-weighted mean held in each of `parts` equal slices of [start, end]."""
    step = (end - start) / parts
    return [held(timeline, start + k * step, start + (k + 1) * step, 1 << 30)["mean"] for k in range(parts)]


def in_flight(intervals: list[tuple[float, float]]) -> list:
    """The client's own count of requests in flight (sent, not yet finished) at every change, as a timeline."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    out, count = [], 0
    for t, step in events:
        count += step
        out.append((t, count, 0))
    return out


def gpubench_client(url: str, args) -> tuple[float, float, float]:
    spec = LoadSpec(base_url=url, model="m", users=args.users, requests=args.users * args.rounds,
                    processes=args.processes, input_tokens=args.input_tokens, output_tokens=args.tokens,
                    ignore_eos=True, timeout_s=120)
    run = run_load(spec)
    intervals = [(r.sent, r.sent + r.e2e_s) for r in run.records]
    info = run.info()
    print(f"gpubench: connections opened while timing {info.get('connections_opened_while_timing', '?')}, peak RSS"
          f" of its processes {info.get('client_processes_peak_rss_mib', '?')} MiB", flush=True)
    return intervals, run.metrics()["output_tokens_per_s"]


def vllm_client(url: str, args, folder: Path) -> tuple[float, float, float]:
    from gpubench.servers.tiny_model import TINY, write_qwen2

    tokenizer = folder / "model"
    if not tokenizer.exists():
        write_qwen2(tokenizer, TINY, weights=False)
    subprocess.run(
        [args.vllm_python, str(VLLM_BENCH), "--backend", "vllm", "--base-url", url, "--endpoint", "/v1/completions",
         "--model", "m", "--tokenizer", str(tokenizer), "--dataset-name", "random",
         "--random-input-len", str(args.input_tokens), "--random-output-len", str(args.tokens),
         "--random-range-ratio", "0", "--num-prompts", str(args.users * args.rounds),
         "--max-concurrency", str(args.users), "--ignore-eos", "--temperature", "0", "--seed", "1",
         "--num-warmups", str(2 * args.users), "--disable-tqdm", "--save-result", "--save-detailed",
         "--result-dir", str(folder), "--result-filename", "vllm.json"], check=True, capture_output=True)
    result = json.loads((folder / "vllm.json").read_text())
    starts, latencies = result["start_times"], result["latencies"]
    return [(s, s + lat) for s, lat in zip(starts, latencies, strict=True)], result["output_throughput"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1024)
    parser.add_argument("--processes", type=int, default=4, help="gpubench's client processes")
    parser.add_argument("--rounds", type=int, default=3, help="timed requests per user")
    parser.add_argument("--ttft-ms", type=float, default=500.0)
    parser.add_argument("--token-ms", type=float, default=100.0)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--input-tokens", type=int, default=16)
    parser.add_argument("--keep-alive-s", type=float, default=5.0)
    parser.add_argument("--backlog", type=int, default=2048)
    parser.add_argument("--vllm-python", default=None, help="also run `vllm bench serve` with this python")
    parser.add_argument("--slices", type=int, default=0, help="also print the mean held in this many slices of the"
                        " window")
    args = parser.parse_args()
    clients = ["gpubench"] + (["vllm bench"] if args.vllm_python else [])
    print(f"server: TTFT {args.ttft_ms:g} ms, a token every {args.token_ms:g} ms, {args.tokens} tokens, keep-alive"
          f" {args.keep_alive_s:g} s, backlog {args.backlog}; {args.users} users x {args.rounds} requests")
    print(f"{'client':<11} {'held mean':>10} {'of N':>6} {'at N':>6} {'N after':>8} {'sent':>6} {'N sent':>7}"
          f" {'conns':>6} {'in window':>9} {'idle-closed':>11} {'tok/s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in clients:
            with streaming_server.running(ttft_ms=args.ttft_ms, token_ms=args.token_ms, keep_alive_s=args.keep_alive_s,
                                          backlog=args.backlog, flavor="vllm") as url:
                if name == "gpubench":
                    intervals, tokens_per_s = gpubench_client(url, args)
                else:
                    intervals, tokens_per_s = vllm_client(url, args, Path(tmp))
                start, end = min(a for a, _ in intervals), max(b for _, b in intervals)
                timeline = streaming_server.timeline(url)
                got = held(timeline, start, end, args.users)
                own = held(in_flight(intervals), start, end, args.users)
                late_connections = sum(start <= t <= end for t in streaming_server.accepted(url))
                served = streaming_server.stats(url)
            def after(value):
                return f"{value:.2f} s" if value is not None else "never"

            print(f"{name:<11} {got['mean']:>10.1f} {got['mean'] / args.users:>6.1%} {got['full_share']:>6.1%}"
                  f" {after(got['first_full_s']):>8} {own['mean'] / args.users:>6.1%} {after(own['first_full_s']):>7}"
                  f" {served['connections']:>6} {late_connections:>9} {served['idle_closed']:>11} {tokens_per_s:>8.0f}",
                  flush=True)
            if args.slices:
                print(f"{'':<11} window {end - start:.2f} s in {args.slices} slices, mean held: "
                      + " ".join(f"{v:.0f}" for v in slices(timeline, start, end, args.slices)), flush=True)
                print(f"{'':<11} the client's own count in flight, same slices:      "
                      + " ".join(f"{v:.0f}" for v in slices(in_flight(intervals), start, end, args.slices)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
