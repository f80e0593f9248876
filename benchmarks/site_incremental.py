"""`gpubench site` over 1,000 SYNTHETIC runs: a full build against the rebuild after one new run.

The target (issue 18): the rebuild takes at most 10% of the full build's time. Runs are made by
tools/synthetic_runs.py in a temporary folder (never benchmarks/results). Each build is `gpubench site` as a
user runs it, in a fresh process, so imports count in both.

    .venv/bin/python benchmarks/site_incremental.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import generate  # noqa: E402

GPUBENCH = Path(sys.executable).parent / "gpubench"


def timed(*args: str) -> tuple[float, float, str]:
    """Wall-clock and CPU seconds (user + system, of the process) of one `gpubench` command, and its last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(GPUBENCH), *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stderr.strip().splitlines()[-1].split(": ", 1)[1].split("; open")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpubench-site-bench-") as tmp:
        store, out = Path(tmp) / "store", Path(tmp) / "site"
        start = time.perf_counter()
        generate(store, args.runs)
        size = sum(f.stat().st_size for f in store.rglob("results.jsonl"))
        print(f"store: {args.runs} synthetic runs, {size / 1e6:.1f} MB of records "
              f"(written in {time.perf_counter() - start:.1f} s)")
        print("                 wall s   CPU s")
        full = timed("site", str(store), "--out", str(out))
        print(f"full build:      {full[0]:6.2f}  {full[1]:6.2f}  ({full[2]})")
        noop = timed("site", str(store), "--out", str(out))
        print(f"nothing new:     {noop[0]:6.2f}  {noop[1]:6.2f}  ({noop[2]})")
        generate(store, 1, seed=1, start=args.runs)
        one = timed("site", str(store), "--out", str(out))
        print(f"one new run:     {one[0]:6.2f}  {one[1]:6.2f}  ({one[2]})")
        print(f"rebuild / full:  {one[0] / full[0]:6.1%}  {one[1] / full[1]:6.1%}  (target: at most 10%)")


if __name__ == "__main__":
    main()
