"""What the harness's sampler costs faster-whisper: the bare timed pass alone and beside each part of the sampler.

`gpubench run whisper` read 13% below benchmarks/whisper_bare.py on the H200 (2026-12-04), and 9% / 4% below it
with the utilisation sampler off (batched turbo / sequential). This loads one model, warms it up, then repeats the
bare script's timed pass over the same audio with one of these beside it, in rotating order, in one process:

  none     nothing (whisper_bare.py's pass)
  sampler  the harness's Sampler thread (gpubench/run/utilisation.py), marked timed as the worker marks it
  slow     the same Sampler reading every 4 x SAMPLE_S
  nvml     a thread making only a reading's seven NVML calls every SAMPLE_S, each timed (the energy counter's too,
           as the Sampler read it in every reading until it was measured here: now once a second)
  proc     a thread making only the Sampler's /proc reads every SAMPLE_S (the process tree, each thread's CPU time)
  process  the Sampler in a child process rooted at this one: its NVML and /proc reads, no GIL shared

One JSON line per pass, then per setup each variant's median speed against none's, and the NVML calls' latency
(idle, before any model; and during the nvml passes).

    python3 benchmarks/whisper_sampler_cost.py --model fw-turbo-fp16-b16=/path/turbo-ct2 --audio audio.npz \
        --fixed-tokens 100 --rounds 3 [--audio-repeat 3] [--variants none,sampler,nvml]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # whisper_bare, beside this file (PYTHONSAFEPATH=1 too)
import whisper_bare  # noqa: E402

from gpubench.run import utilisation  # noqa: E402

VARIANTS = ("none", "sampler", "slow", "nvml", "proc", "process")


def nvml_calls(nvml) -> dict:
    """The calls Nvml.read(counter=True) makes for one GPU, in its order (gpubench/measure/nvml.py)."""
    nv, handle = nvml.nv, nvml.handles[0]
    return {
        "utilization": lambda: nv.nvmlDeviceGetUtilizationRates(handle),
        "sm_clock": lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM),
        "power": lambda: nv.nvmlDeviceGetPowerUsage(handle),
        "power_instant": lambda: nvml._power_instant_mw(handle),
        "energy": lambda: nv.nvmlDeviceGetTotalEnergyConsumption(handle),
        "memory": lambda: nv.nvmlDeviceGetMemoryInfo(handle),
        "reasons": lambda: nvml._reasons(handle),
    }


def time_calls(calls: dict, into: dict) -> None:
    for name, call in calls.items():
        started = time.perf_counter()
        with contextlib.suppress(Exception):  # a figure the GPU lacks costs its call all the same
            call()
        into.setdefault(name, []).append(1e6 * (time.perf_counter() - started))


def latency_summary(timings: dict) -> dict:
    return {name: {"n": len(us), "median_us": round(statistics.median(us), 1), "max_us": round(max(us), 1)}
            for name, us in timings.items() if us}


class Beside:
    """One variant's companion: started before the pass's clock, stopped after it; `readings` it made."""

    def __init__(self, variant: str, nvml):
        self.variant, self.nvml, self.readings = variant, nvml, 0
        self.call_us: dict[str, list[float]] = {}
        self._stop = threading.Event()
        self._thread = self._sampler = self._child = None

    def __enter__(self) -> Beside:
        if self.variant in ("sampler", "slow"):
            interval = utilisation.SAMPLE_S * (4 if self.variant == "slow" else 1)
            self._sampler = utilisation.Sampler(self.nvml, interval=interval).start()
            self._sampler.mark(True)
        elif self.variant in ("nvml", "proc"):
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        elif self.variant == "process":
            spawn = multiprocessing.get_context("spawn")
            self._queue, self._child_stop, ready = spawn.Queue(), spawn.Event(), spawn.Event()
            self._child = spawn.Process(target=sample_from_child, args=(os.getpid(), self._child_stop, ready,
                                                                        self._queue), daemon=True)
            self._child.start()
            ready.wait(60)
        return self

    def _loop(self) -> None:
        calls = nvml_calls(self.nvml) if self.variant == "nvml" else None
        pids, refreshed = utilisation.process_tree(os.getpid()), time.monotonic()
        own = threading.get_native_id()
        while not self._stop.is_set():
            if calls is not None:
                time_calls(calls, self.call_us)
            else:
                if time.monotonic() - refreshed >= utilisation.TREE_REFRESH_S:
                    pids, refreshed = utilisation.process_tree(os.getpid()), time.monotonic()
                utilisation.thread_cpu_ns(pids, skip_tid=own)
            self.readings += 1
            self._stop.wait(utilisation.SAMPLE_S)

    def __exit__(self, *exc) -> None:
        if self._sampler is not None:
            self._sampler.mark(False)
            self.readings = self._sampler.stop().facts.samples
        elif self._thread is not None:
            self._stop.set()
            self._thread.join()
        elif self._child is not None:
            self._child_stop.set()
            self.readings = self._queue.get(timeout=60)
            self._child.join(10)


def sample_from_child(root: int, stop, ready, queue) -> None:
    nvml, _ = utilisation.open_nvml()
    sampler = utilisation.Sampler(nvml, root=root).start()
    sampler.mark(True)
    ready.set()
    stop.wait()
    sampler.mark(False)
    queue.put(sampler.stop().facts.samples)


def passes(setup: str, folder: str, clips: list, args, nvml, variants: list[str]) -> list[dict]:
    transcribe, _, _ = whisper_bare.transcriber(setup, folder, args)
    transcribe(clips[0][: int(args.warmup_s * whisper_bare.SAMPLE_RATE)])
    audio_s = sum(len(clip) for clip in clips) / whisper_bare.SAMPLE_RATE
    rows = []
    for round_ in range(1, args.rounds + 1):
        shift = (round_ - 1) % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            with Beside(variant, nvml) as beside:
                started = time.perf_counter()
                tokens = sum(transcribe(clip) for clip in clips)
                seconds = time.perf_counter() - started
            row = {"setup": setup, "round": round_, "variant": variant, "realtime_factor": audio_s / seconds,
                   "transcribe_s": seconds, "decoded_tokens": tokens, "readings": beside.readings}
            if beside.call_us:
                row["nvml_call_us"] = latency_summary(beside.call_us)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def summary(setup: str, rows: list[dict]) -> dict:
    speeds = {}
    for row in rows:
        speeds.setdefault(row["variant"], []).append(row["realtime_factor"])
    medians = {variant: statistics.median(values) for variant, values in speeds.items()}
    base = medians.get("none")
    return {"setup": setup, "summary": {
        variant: {"median_realtime_factor": round(median, 2), "spread": [round(min(speeds[variant]), 2),
                                                                         round(max(speeds[variant]), 2)],
                  "vs_none_pct": None if base is None else round(100 * (median / base - 1), 2)}
        for variant, median in medians.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, metavar="SETUP=FOLDER")
    parser.add_argument("--audio", required=True, help=".npz of 16 kHz float32 clips (gpu_whisper_ct2.sh's)")
    parser.add_argument("--fixed-tokens", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--audio-repeat", type=int, default=1, help="the clips this many times (a longer pass)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--language", default="en")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: a dry run (no NVML: no nvml)")
    parser.add_argument("--cpu-threads", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--beam-size", type=int, default=5)
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    models = [item.partition("=")[::2] for item in args.model]
    bad = [s for s, f in models if s not in whisper_bare.SETUPS or not f]
    if unknown or bad or args.rounds < 1 or args.audio_repeat < 1:
        print(f"whisper_sampler_cost: variants from {', '.join(VARIANTS)}; --model SETUP=FOLDER with SETUP one of "
              f"{', '.join(whisper_bare.SETUPS)}; --rounds and --audio-repeat 1 or more", file=sys.stderr)
        return 2
    import numpy as np

    loaded = np.load(args.audio)
    clips = [loaded[key] for key in loaded.files] * args.audio_repeat
    nvml, why = utilisation.open_nvml()
    if nvml is None:  # a CPU dry run: the Sampler reads /proc alone
        print(json.dumps({"nvml": why, "left_out": [v for v in variants if v == "nvml"]}), flush=True)
        variants = [v for v in variants if v != "nvml"]
    else:
        idle: dict[str, list[float]] = {}
        for _ in range(200):
            time_calls(nvml_calls(nvml), idle)
        print(json.dumps({"nvml_call_us_idle": latency_summary(idle)}), flush=True)
    for setup, folder in models:
        print(json.dumps(summary(setup, passes(setup, folder, clips, args, nvml, variants))), flush=True)
    if nvml is not None:
        nvml.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
