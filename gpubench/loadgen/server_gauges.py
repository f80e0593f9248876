"""The server's own count of the requests it is running and holding in its queue, sampled through the timed phase.

A closed loop of N users asks the server to hold N requests at every moment; whether it did is the server's to say.
vLLM's /metrics has two gauges: `vllm:num_requests_running` (in the engine's batch) and `vllm:num_requests_waiting`
(queued for it); SGLang and llama.cpp (with --metrics) have their own (`GAUGES`). A sampler process (spawned: the
client's event loop and its GIL never pay for a read of /metrics; named `gpubench-client`, as the client's are)
checks once that the gauges are there and says it is ready (the load waits for that: on busy cores a spawned
interpreter takes seconds to start, and a short timed phase could end before its first read), reads them every
INTERVAL_S from when the timed phase begins until it is stopped, and the samples inside the timed window are
summarised beside the asked concurrency, with the series as read. A server without them is said once
(`Gauges.note`). Every read costs the server a /metrics page, so the interval is half a second.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import statistics
import time
import urllib.request
from dataclasses import dataclass, field

from gpubench import prometheus
from gpubench.loadgen.share import name_process

# who the server is (server_id.py) -> its gauges of requests running and of requests waiting
GAUGES = {"vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
          "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
          "llamacpp": ("llamacpp:requests_processing", "llamacpp:requests_deferred")}
INTERVAL_S = 0.5
SERIES_MAX = 600  # samples kept in the result as they were read (5 minutes at INTERVAL_S); the summary has them all
READ_TIMEOUT_S = 5.0
READY_TIMEOUT_S = 60.0  # a spawned interpreter's start and first read, on cores shared with other work


@dataclass
class Gauges:
    """What the sampler saw: (perf_counter, running, waiting) samples, or why there are none."""

    samples: list[tuple[float, float, float]] = field(default_factory=list)
    note: str | None = None
    names: tuple[str, str] = ("", "")
    interval_s: float = INTERVAL_S

    def within(self, start: float, end: float) -> Gauges:
        return Gauges([s for s in self.samples if start <= s[0] <= end], self.note, self.names, self.interval_s)

    def info(self, asked: int) -> dict:
        if self.note or not self.samples:
            return {"asked": asked, "note": self.note or "no sample fell inside the timed phase (too short)"}

        def summary(values: list[float]) -> dict:
            return {"mean": round(statistics.fmean(values), 2), "p50": statistics.median(values),
                    "min": min(values), "max": max(values)}

        start = self.samples[0][0]
        return {"asked": asked, "source": f"/metrics {self.names[0]}, {self.names[1]}", "interval_s": self.interval_s,
                "samples": len(self.samples), "running": summary([s[1] for s in self.samples]),
                "waiting": summary([s[2] for s in self.samples]),
                "series": [[round(t - start, 2), r, w] for t, r, w in self.samples[:SERIES_MAX]]}

    def metrics(self) -> dict[str, float]:
        if self.note or not self.samples:
            return {}
        return {"server_running_mean": statistics.fmean(s[1] for s in self.samples),
                "server_waiting_mean": statistics.fmean(s[2] for s in self.samples)}


class GaugeSampler:
    """A process reading the server's gauges: `begin()` when the timed phase starts, `stop()` for what it read."""

    def __init__(self, root_url: str, names: tuple[str, str], interval_s: float | None = None):
        interval_s = INTERVAL_S if interval_s is None else interval_s
        ctx = multiprocessing.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_sample, args=(f"{root_url.rstrip('/')}/metrics", names, interval_s, child),
                                 name="gpubench-gauges", daemon=True)
        self._proc.start()
        child.close()
        with contextlib.suppress(OSError, EOFError):
            if self._pipe.poll(READY_TIMEOUT_S):
                self._pipe.recv()  # "ready": it has read the gauges once

    def begin(self) -> None:
        with contextlib.suppress(OSError):
            self._pipe.send("begin")

    def stop(self) -> Gauges:
        try:
            self._pipe.send("stop")
            got = Gauges(note="the gauge sampler did not answer")
            while self._pipe.poll(READ_TIMEOUT_S + 5):
                answer = self._pipe.recv()
                if isinstance(answer, Gauges):  # not a "ready" that came after __init__ stopped waiting
                    got = answer
                    break
        except (OSError, EOFError):
            got = Gauges(note="the gauge sampler exited")
        finally:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.terminate()
        return got


def page(url: str) -> dict[str, float] | str:
    """One /metrics page's samples (prometheus.parse), or why there is none."""
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_S) as resp:
            return prometheus.parse(resp.read().decode(errors="replace"))
    except OSError as exc:
        return f"no /metrics page ({getattr(exc, 'code', None) or getattr(exc, 'reason', None) or exc})"


def read(url: str, names: tuple[str, str]) -> tuple[float, float] | str:
    """(running, waiting) from one /metrics page, or why not."""
    samples = page(url)
    if isinstance(samples, str):
        return samples
    running, waiting = names
    if running not in samples or waiting not in samples:
        return f"its /metrics has no {running} and {waiting} gauges"
    return samples[running], samples[waiting]


def _sample(url: str, names: tuple[str, str], interval_s: float, pipe) -> None:
    name_process()
    first = read(url, names)
    gauges = Gauges(note=f"the server's running and waiting requests are not known: {first}"
                    if isinstance(first, str) else None, names=names, interval_s=interval_s)
    try:
        pipe.send("ready")
        if pipe.recv() == "begin":
            # half an interval in: a read at the very start sees the closed loop before its first requests arrive
            due = time.perf_counter() + interval_s / 2
            while gauges.note is None and not pipe.poll(max(0.0, due - time.perf_counter())):
                at = time.perf_counter()
                got = read(url, names)
                if isinstance(got, tuple):
                    gauges.samples.append((at, *got))
                due += interval_s
            pipe.recv()  # stop
        pipe.send(gauges)
    except (EOFError, OSError):
        pass  # the parent went away
