"""Log a server's gauges of requests running and waiting, and its token counters, while a client loads it.

    python benchmarks/server_gauges_log.py BASE_URL OUT.json [--kind vllm]

Reads /metrics every 0.5 s (gpubench/loadgen/server_gauges.py, as `gpubench loadgen` does for its own timed phase)
until SIGTERM or SIGINT, then writes {"names": [running, waiting], "samples": [[unix time, monotonic time, running,
waiting], ...], "counter_names": [...], "counters": [[unix time, monotonic time, value or null, ...], ...]}.
serving_peer_table.py averages the gauges inside a client's timed window (vLLM's client's detailed result has start
times on perf_counter, the same monotonic clock; gpubench's result has its window on the wall clock), and reads the
counters across it: the server's own tokens per second, prompt tokens per request, engine steps and preemptions,
whichever client measured.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from gpubench import prometheus
from gpubench.loadgen.server_gauges import GAUGES, INTERVAL_S, page
from gpubench.loadgen.server_id import root_of

# the server's own count of what it did; a histogram's _count and _sum are two counters (iteration_tokens: one
# observation per engine step, of the tokens it scheduled)
COUNTERS = {"vllm": ("vllm:generation_tokens", "vllm:prompt_tokens", "vllm:request_success",
                     "vllm:iteration_tokens_total_count", "vllm:iteration_tokens_total_sum", "vllm:num_preemptions",
                     "vllm:prefix_cache_queries", "vllm:prefix_cache_hits")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("out")
    parser.add_argument("--kind", default="vllm", choices=sorted(GAUGES))
    args = parser.parse_args()
    names, counters, url = GAUGES[args.kind], COUNTERS.get(args.kind, ()), f"{root_of(args.base_url)}/metrics"
    samples: list[list[float]] = []
    counted: list[list[float | None]] = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    due = time.monotonic()
    while not stop:
        unix, mono = time.time(), time.monotonic()
        got = page(url)
        if not isinstance(got, str):
            if all(name in got for name in names):
                samples.append([unix, mono, *(got[name] for name in names)])
            if counters:
                counted.append([unix, mono, *(prometheus.counter(got, name) for name in counters)])
        due += INTERVAL_S
        time.sleep(max(0.0, due - time.monotonic()))
    with open(args.out, "w") as f:
        json.dump({"names": list(names), "samples": samples, "counter_names": list(counters), "counters": counted}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
