"""Load benchmark of gpubench-launch against the fake Runcrate (not a test: it reports, it asserts nothing).

One launcher process runs N smoke jobs at once (`--each`, one run per --gpu; they share the
launcher's one request budget), or with --processes N launcher processes run one job each, against
one fake API on this machine. Each job prints a RunStarted record, then a Progress record every
--interval seconds (--ticks of them), then a result and RunFinished. Every record carries its
write time (`ts`), so the delay from a line written in the job to it being printed by the
launcher (its stdout, read here) is measured per line.

Reported: API requests per second (all launchers together: over the whole run, and the busiest
60 s and 10 s windows), launcher CPU time, the write -> print delay p50/p95/max, and whether every
line arrived (nothing lost).

    .venv/bin/python benchmarks/launcher_load.py                  # 50 jobs, real-use pacing (poll 10 s)
    .venv/bin/python benchmarks/launcher_load.py --jobs 10 --poll-s 2
    .venv/bin/python benchmarks/launcher_load.py --jobs 1 --jobs 10 --jobs 50 --json out.json  # the issue's table
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fake lives with the tests

API_KEY = "rc_live_benchmark-key-0000000000"
GPUS = ["L40S", "A4000", "RTX5090", "A100", "H100"]

JOB = r'''
import os, sys, time
from gpubench.schema import (Environment, Metric, Progress, RunFinished, RunStarted, SetupResult,
                             summarize_results, to_line)
ticks, interval, idle = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
rid = os.environ["GPUBENCH_RUN_ID"]
def emit(record):
    sys.stdout.write(to_line(record) + "\n")
    sys.stdout.flush()
emit(RunStarted(run_id=rid, workload="train-compile", study="load", setups=["tick"], repeats=1, smoke=True,
                config={}, environment=Environment(python="3", platform="load")))
for i in range(ticks):
    emit(Progress(run_id=rid, phase="tick", setup="tick", done=i, total=ticks))
    print(f"text line {i}", file=sys.stderr, flush=True)
    time.sleep(interval)
time.sleep(idle)  # an idle stretch: nothing printed, only polling
r = SetupResult(run_id=rid, setup="tick", repeat=1, status="ok",
                metrics={"ticks": Metric(value=ticks, unit="count")})
emit(r)
emit(RunFinished(run_id=rid, status="ok", duration_s=ticks * interval, summary=summarize_results(["tick"], [r])))
'''


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def run_launcher(index: int, jobs: int, args, env: dict[str, str], workdir: Path, out: dict) -> None:
    command = f"python -c {shlex.quote(JOB)} {args.ticks} {args.interval} {args.idle_s}"
    gpus = [a for i in range(jobs) for a in ("--gpu", GPUS[(index + i) % len(GPUS)])]
    argv = [str(Path(sys.executable).parent / "gpubench-launch"), "train-compile", *gpus, "--each", "--smoke",
            "--job-command", command, "--results-dir", str(workdir / "results")]
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)
    delays, begun, first = [], time.monotonic(), None
    for line in proc.stdout:
        now = time.time()
        first = first or time.monotonic()
        if line.startswith("{"):
            record = json.loads(line)
            if record["kind"] == "progress":
                delays.append(now - epoch(record["ts"]))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    ended = time.monotonic()
    out[index] = {"code": proc.returncode, "cpu_s": usage.ru_utime + usage.ru_stime, "delays": delays,
                  "jobs": jobs, "to_first_record_s": (first or ended) - begun, "wall_s": ended - begun}


def busiest(samples: list[tuple[float, int]], window_s: float) -> float | None:
    """The most requests per second over any window_s seconds of the run."""
    best = None
    start = 0
    for end in range(len(samples)):
        while samples[end][0] - samples[start][0] > window_s:
            start += 1
        if samples[end][0] - samples[start][0] >= window_s * 0.9:
            rate = (samples[end][1] - samples[start][1]) / (samples[end][0] - samples[start][0])
            best = rate if best is None else max(best, rate)
    return None if best is None else round(best, 2)


def measure(jobs: int, args) -> dict:
    from fake_runcrate import FakeRuncrate

    workdir = Path(tempfile.mkdtemp(prefix="launcher-load-"))
    processes = jobs if args.processes else 1
    with FakeRuncrate(api_key=API_KEY, minute_s=60.0, follow_hold_s=args.hold_s) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_"))}
        env.update({"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
                    "GPUBENCH_STATE_DIR": str(workdir / "state"), "GPUBENCH_POLL_S": str(args.poll_s)})
        if args.stream_gap_s is not None:
            env["GPUBENCH_STREAM_GAP_S"] = str(args.stream_gap_s)
        if args.api_rate is not None:
            env["GPUBENCH_API_RATE"] = str(args.api_rate)
        results: dict[int, dict] = {}
        threads = [threading.Thread(target=run_launcher, args=(i, jobs // processes, args, env, workdir, results))
                   for i in range(processes)]
        samples: list[tuple[float, int]] = []
        running = threading.Event()
        running.set()

        def sample() -> None:
            while running.is_set():
                samples.append((time.monotonic(), len(fake.requests)))
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        started = time.monotonic()
        sampler.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        running.clear()
        sampler.join()
        requests = list(fake.requests)

    kinds = Counter()
    for r in requests:
        if r.path.endswith("/logs"):
            kinds["logs (follow)"] += 1
        elif r.method == "POST" and r.path == "/api/v1/jobs":
            kinds["submit"] += 1
        elif r.method == "GET" and r.path.startswith("/api/v1/jobs/") and r.path.count("/") == 4:
            kinds["job status"] += 1
        else:
            kinds["other (types, events, metrics, artifacts, cancel)"] += 1
    cpu = [r["cpu_s"] for r in results.values()]
    delays = [d for r in results.values() for d in r["delays"]]
    return {
        "jobs": jobs, "launcher_processes": processes, "ticks_per_job": args.ticks,
        "tick_interval_s": args.interval, "poll_s": args.poll_s, "fake_follow_hold_s": args.hold_s,
        "wall_s": round(wall, 2), "exit_codes": dict(Counter(r["code"] for r in results.values())),
        "api_requests": len(requests), "api_requests_per_s": round(len(requests) / wall, 2),
        "busiest_60s_requests_per_s": busiest(samples, 60.0), "busiest_10s_requests_per_s": busiest(samples, 10.0),
        "api_requests_per_job": round(len(requests) / jobs, 1), "requests_by_kind": dict(kinds),
        "launcher_cpu_s": round(sum(cpu), 2),
        "lines_expected": jobs * args.ticks, "lines_printed": len(delays),
        "line_to_print_delay_s": {"p50": round(percentile(delays, 0.5), 3), "p95": round(percentile(delays, 0.95), 3),
                                  "max": round(max(delays, default=float("nan")), 3)},
        "first_record_s_max": round(max(r["to_first_record_s"] for r in results.values()), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, action="append", help="jobs at once (repeat for several measurements; "
                                                                  "default 50)")
    parser.add_argument("--processes", action="store_true", help="one launcher process per job (old behaviour)")
    parser.add_argument("--ticks", type=int, default=20, help="progress records per job")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between them")
    parser.add_argument("--idle-s", type=float, default=0.0, help="then this long printing nothing")
    parser.add_argument("--poll-s", type=float, default=10.0, help="GPUBENCH_POLL_S of the launchers")
    parser.add_argument("--api-rate", type=float, default=None, help="GPUBENCH_API_RATE (default: launcher's)")
    parser.add_argument("--stream-gap-s", type=float, default=None, help="GPUBENCH_STREAM_GAP_S (default: launcher's)")
    parser.add_argument("--hold-s", type=float, default=25.0, help="the fake's follow hold (the real API: 25 s)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    reports = []
    for jobs in args.jobs or [50]:
        reports.append(measure(jobs, args))
        print(json.dumps(reports[-1], indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2) + "\n")


if __name__ == "__main__":
    main()
