"""Load benchmark of gpubench-launch against the fake Runcrate (not a test: it reports, it asserts nothing).

N launcher processes run at once, one smoke job each, against one fake API on this machine. Each
job prints a RunStarted record, then a Progress record every --interval seconds (--ticks of them),
then a result and RunFinished. Every record carries its write time (`ts`), so the delay from a line
written in the job to it being printed by the launcher (its stdout, read here) is measured per line.

Reported: API requests per second (all launchers together, and per job), launcher CPU time per job
(user + system of each launcher process, from wait4), and the write -> print delay p50/p95/max.

    .venv/bin/python benchmarks/launcher_load.py                  # 50 jobs, real-use pacing (poll 10 s)
    .venv/bin/python benchmarks/launcher_load.py --jobs 10 --poll-s 2
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
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


def run_launcher(index: int, args, env: dict[str, str], workdir: Path, out: dict) -> None:
    command = f"python -c {shlex.quote(JOB)} {args.ticks} {args.interval} {args.idle_s}"
    argv = [str(Path(sys.executable).parent / "gpubench-launch"), "train-compile", "--gpu",
            GPUS[index % len(GPUS)], "--smoke", "--job-command", command, "--results-dir", str(workdir / "results")]
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)
    delays, begun, first, last = [], time.monotonic(), None, None
    for line in proc.stdout:
        now = time.time()
        last = time.monotonic()
        first = first or last
        if line.startswith("{"):
            record = json.loads(line)
            if record["kind"] == "progress":
                delays.append(now - epoch(record["ts"]))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    ended = time.monotonic()
    out[index] = {"code": proc.returncode, "cpu_s": usage.ru_utime + usage.ru_stime, "delays": delays,
                  "first_at": first or ended, "ended_at": ended,
                  "to_first_record_s": (first or ended) - begun, "last_record_to_exit_s": ended - (last or ended),
                  "wall_s": ended - begun}


def idle_rate(samples: list[tuple[float, int]], results: dict[int, dict], args) -> float | None:
    """API requests per job per 10 s while every job sat idle (all printed their ticks, none ended yet)."""
    if args.idle_s <= 0:
        return None
    begin = max(r["first_at"] for r in results.values()) + args.ticks * args.interval + 2
    end = min(r["ended_at"] for r in results.values()) - 2
    window = [(t, n) for t, n in samples if begin <= t <= end]
    if len(window) < 2 or window[-1][0] - window[0][0] < 10:
        return None
    (t0, n0), (t1, n1) = window[0], window[-1]
    return round((n1 - n0) / len(results) / ((t1 - t0) / 10), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--ticks", type=int, default=20, help="progress records per job")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between them")
    parser.add_argument("--idle-s", type=float, default=0.0, help="then this long printing nothing")
    parser.add_argument("--poll-s", type=float, default=10.0, help="GPUBENCH_POLL_S of the launchers")
    parser.add_argument("--stream-gap-s", type=float, default=None, help="GPUBENCH_STREAM_GAP_S (default: launcher's)")
    parser.add_argument("--hold-s", type=float, default=25.0, help="the fake's follow hold (the real API: 25 s)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    from fake_runcrate import FakeRuncrate

    workdir = Path(tempfile.mkdtemp(prefix="launcher-load-"))
    with FakeRuncrate(api_key=API_KEY, minute_s=60.0, follow_hold_s=args.hold_s) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_"))}
        env.update({"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
                    "GPUBENCH_STATE_DIR": str(workdir / "state"), "GPUBENCH_POLL_S": str(args.poll_s)})
        if args.stream_gap_s is not None:
            env["GPUBENCH_STREAM_GAP_S"] = str(args.stream_gap_s)
        results: dict[int, dict] = {}
        threads = [threading.Thread(target=run_launcher, args=(i, args, env, workdir, results))
                   for i in range(args.jobs)]
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
    codes = Counter(r["code"] for r in results.values())
    report = {
        "jobs": args.jobs, "ticks_per_job": args.ticks, "tick_interval_s": args.interval,
        "poll_s": args.poll_s, "fake_follow_hold_s": args.hold_s, "cpus": os.cpu_count(),
        "wall_s": round(wall, 2), "exit_codes": dict(codes),
        "api_requests": len(requests), "api_requests_per_s": round(len(requests) / wall, 2),
        "api_requests_per_job": round(len(requests) / args.jobs, 1),
        "api_requests_per_job_per_min": round(len(requests) / args.jobs / (wall / 60), 2),
        "requests_by_kind": dict(kinds),
        # While a job runs, only held log reads and status reads go out; per job and per 10 s of its run:
        "idle_requests_per_job_per_10s": idle_rate(samples, results, args),
        "launcher_cpu_s_per_job": {"mean": round(statistics.mean(cpu), 3), "p50": round(percentile(cpu, 0.5), 3),
                                   "max": round(max(cpu), 3)},
        "per_launcher_s": {key: {"p50": round(percentile([r[key] for r in results.values()], 0.5), 2),
                                 "max": round(max(r[key] for r in results.values()), 2)}
                           for key in ("wall_s", "to_first_record_s", "last_record_to_exit_s")},
        "line_to_print_delay_s": {"n": len(delays), "p50": round(percentile(delays, 0.5), 3),
                                  "p95": round(percentile(delays, 0.95), 3), "max": round(max(delays), 3)},
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
