"""What the utilisation sampler's thread costs a workload whose host loop holds the GIL, against the same readings
taken from a process of their own.

    python benchmarks/sampler_gil_cost.py [--trials 5] [--seconds 2] [--threads 0] [--interval 0.05]

A pure-Python loop (dict stores, the shape of faster-whisper's or any eager loop's host-side Python) runs for
--seconds, in turns: alone; beside gpubench's Sampler (gpubench/run/utilisation.py, started as the worker starts it,
with NVML where the machine has it); beside a spawned process that takes the same /proc and NVML readings of this
process every --interval. --threads idle threads stand in for an engine's thread pool (each is one more /proc file
a reading opens). Prints each turn's loop rate and, per arm, the median change against the alone turns. On the
H200, whisper's faster-whisper setups read 9 to 13% below a bare script with the sampler on and 4 to 9% with it off
(docs/gpu-whisper.md): this measures the sampler's share of that without a GPU.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import threading
import time

from gpubench.run import utilisation


def python_loop(seconds: float) -> float:
    """Rounds per second of a loop that holds the GIL the whole time."""
    rounds, table = 0, {}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for i in range(1000):
            table[i & 63] = i
        rounds += 1
    return rounds / seconds


def _read_from_a_process(root: int, interval: float, stop) -> None:
    nvml, _ = utilisation.open_nvml()
    me = os.getpid()
    while not stop.wait(interval):
        if nvml is not None:
            nvml.read()
        utilisation.thread_cpu_ns([pid for pid in utilisation.process_tree(root) if pid != me])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=0, help="idle threads beside the loop")
    parser.add_argument("--interval", type=float, default=utilisation.SAMPLE_S)
    args = parser.parse_args()

    idle = threading.Event()
    for _ in range(args.threads):
        threading.Thread(target=idle.wait, daemon=True).start()
    spawn = multiprocessing.get_context("spawn")
    rates: dict[str, list[float]] = {"alone": [], "sampler thread": [], "sampler process": []}
    for trial in range(args.trials):
        rates["alone"].append(python_loop(args.seconds))

        nvml, _ = utilisation.open_nvml()
        sampler = utilisation.Sampler(nvml, interval=args.interval).start()
        rates["sampler thread"].append(python_loop(args.seconds))
        samples = len(sampler.samples)
        sampler.stop()
        if nvml is not None:
            nvml.close()

        stop = spawn.Event()
        child = spawn.Process(target=_read_from_a_process, args=(os.getpid(), args.interval, stop), daemon=True)
        child.start()
        time.sleep(1.0)  # its interpreter's start is not part of the turn
        rates["sampler process"].append(python_loop(args.seconds))
        stop.set()
        child.join()
        print(f"trial {trial + 1}: " + ", ".join(f"{arm} {values[-1]:,.0f}/s" for arm, values in rates.items())
              + f" ({samples} thread readings)", flush=True)
    alone = statistics.median(rates["alone"])
    for arm in ("sampler thread", "sampler process"):
        change = 100 * (statistics.median(rates[arm]) / alone - 1)
        print(f"{arm}: median {statistics.median(rates[arm]):,.0f}/s, {change:+.1f}% against alone "
              f"({alone:,.0f}/s), {args.threads} idle threads, every {args.interval * 1000:.0f} ms")


if __name__ == "__main__":
    main()
