"""Run a command and sample the CPU time of its process tree: which client process was how busy, and when.

    python benchmarks/client_cpu.py SERIES.json -- COMMAND [ARGS...]

Every SAMPLE_S it reads utime + stime and the resident memory of the command and every process below it (/proc),
and on exit writes {"samples": [[unix time, {pid: cpu seconds}], ...], "rss": [[unix time, bytes of the whole tree],
...], "names": {pid: comm}, "exit": code} and exits with the command's code. serving_peer_table.py turns a window of
the series into the busiest process's share of a core, so a client's start-up (importing vLLM, loading a tokenizer)
is left out of its share, and takes the tree's peak memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from gpubench.run.utilisation import process_tree

SAMPLE_S = 0.25
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_s(pid: int) -> tuple[str, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    name = stat[stat.index("(") + 1: stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()
    return name, (int(fields[11]) + int(fields[12])) * TICK_S


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print("usage: client_cpu.py SERIES.json -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    proc = subprocess.Popen(sys.argv[3:])
    samples, names, rss = [], {}, []
    while proc.poll() is None:
        row, memory = {}, 0
        for pid in process_tree(proc.pid):
            got = cpu_s(pid)
            if got:
                names[pid], row[pid] = got
                memory += rss_bytes(pid)
        samples.append([time.time(), row])
        rss.append([time.time(), memory])
        time.sleep(SAMPLE_S)
    with open(sys.argv[1], "w") as f:
        json.dump({"samples": samples, "rss": rss, "names": names, "exit": proc.returncode}, f)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
