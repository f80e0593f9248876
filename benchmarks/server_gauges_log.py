"""Log a server's gauges of requests running and waiting while another client loads it (the peer check's vLLM run).

    python benchmarks/server_gauges_log.py BASE_URL OUT.json [--kind vllm]

Reads /metrics every 0.5 s (gpubench/loadgen/server_gauges.py, as `gpubench loadgen` does for its own timed phase)
until SIGTERM or SIGINT, then writes {"names": [running, waiting], "samples": [[unix time, monotonic time, running,
waiting], ...]}. serving_peer_table.py averages the samples inside vLLM's client's timed window (its detailed result's
start times are perf_counter's, the same monotonic clock).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from gpubench.loadgen.server_gauges import GAUGES, INTERVAL_S, read
from gpubench.loadgen.server_id import root_of


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("out")
    parser.add_argument("--kind", default="vllm", choices=sorted(GAUGES))
    args = parser.parse_args()
    names, url = GAUGES[args.kind], f"{root_of(args.base_url)}/metrics"
    samples: list[list[float]] = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    due = time.monotonic()
    while not stop:
        got = read(url, names)
        if isinstance(got, tuple):
            samples.append([time.time(), time.monotonic(), *got])
        due += INTERVAL_S
        time.sleep(max(0.0, due - time.monotonic()))
    with open(args.out, "w") as f:
        json.dump({"names": list(names), "samples": samples}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
