"""Drive a load: ask who the server is, plan every request, then warm-up and the timed requests.

`run_load` is synchronous (it runs the event loops) and returns a LoadRun; it raises LoadFailed when a
warm-up request fails or the share of failed timed requests passes spec.max_error_rate. Before anything is sent it
asks the server who it is (server_id.py) and how a chunk's tokens are counted (token_counts.py), then plans the load
once (every request's bytes, the open loop's schedule). Through the timed phase a sampler reads the server's own
gauges of requests running and waiting where it has them (server_gauges.py). The load is split into shares, one per
client process (spec.client_processes()): with one share it runs here (share.py); with several, fanout.py runs each
in a process of its own, all from one start time, and the records come back in the order they were built, as from
one process. Everything the records need is kept raw while the load runs and parsed after (client.py); each share
measures its own CPU time and peak memory.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gpubench.loadgen import arrivals, client, fanout, prompts, server_gauges, server_id, token_counts
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.http_client import Target
from gpubench.loadgen.metrics import summarize
from gpubench.loadgen.server_gauges import Gauges
from gpubench.loadgen.share import LoadFailed, LocalCounter, Plan, Progress, Ticker, drive_share
from gpubench.loadgen.spec import LoadSpec
from gpubench.loadgen.token_counts import TokenCounting

__all__ = ["LoadFailed", "LoadRun", "run_load"]


@dataclass(frozen=True)
class ClientShare:
    """One client process's cost over the timed phase."""

    cpu_s: float
    wall_s: float
    peak_rss_bytes: int = 0
    timed_connections: int = 0  # connections it opened while timing

    @property
    def cpu_pct(self) -> float:
        return 100.0 * self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class LoadRun:
    spec: LoadSpec
    records: list[RequestRecord]  # the timed requests, in the order they were built
    warmup: list[RequestRecord]
    duration_s: float  # first timed request sent -> last one finished
    client_cpu_s: float  # the client processes' CPU time over the timed phase, together
    clients: list[ClientShare] = field(default_factory=list)  # each client process
    counting: TokenCounting = field(default_factory=lambda: token_counts.given("chunks"))
    gauges: Gauges = field(default_factory=lambda: Gauges(note="not sampled"))  # inside the timed window
    started_unix: float | None = None  # when the first timed request was sent, on the wall clock

    @property
    def failed(self) -> list[RequestRecord]:
        return [r for r in self.records if not r.ok]

    @property
    def errors(self) -> dict[str, int]:
        return dict(Counter(r.error_kind for r in self.failed).most_common())

    def metrics(self) -> dict[str, float]:
        out = summarize(self.records, self.duration_s, self.client_cpu_s, self.spec.rate,
                        [c.cpu_pct for c in self.clients])
        if any(c.peak_rss_bytes for c in self.clients):
            out["client_rss_mib"] = sum(c.peak_rss_bytes for c in self.clients) / 2**20
        return {**out, **self.gauges.metrics()}

    def info(self) -> dict:
        """Facts for a result's `info`: errors by kind with an example each, usage mismatches, the client."""
        examples = {}
        for r in self.failed:
            examples.setdefault(r.error_kind, r.error)
        ok = [r for r in self.records if r.ok]
        mismatches = [r for r in ok if r.usage_mismatch]
        counting = {**self.counting.info(), "tokens_counted": sum(r.tokens_received for r in ok),
                    "server_counted": sum(r.completion_tokens or 0 for r in ok)}
        if uncounted := sum(r.counted_by is None for r in ok):
            counting["requests_counted_by_chunks"] = uncounted  # their chunks did not say: not checked
        if unreported := sum(r.completion_tokens is None for r in ok):
            counting["requests_without_usage"] = unreported  # the server's count is missing: ours is used
        return {
            "url": self.spec.url, "errors_by_kind": self.errors, "error_examples": examples,
            "token_counting": counting,
            "usage_mismatch_example": mismatches[0].usage_mismatch if mismatches else None,
            "prompts_sent_as": prompts.sent_as(self.spec),
            "prompt_tokens_exact": all(r.prompt_tokens_sent is not None for r in self.records),
            "warmup_requests": len(self.warmup),
            "client_processes_cpu_pct": [round(c.cpu_pct, 1) for c in self.clients],
            "client_processes_peak_rss_mib": [round(c.peak_rss_bytes / 2**20, 1) for c in self.clients],
            "connections_opened_while_timing": sum(c.timed_connections for c in self.clients),
            "server_gauges": self.gauges.info(self.spec.concurrency),
            # the timed phase on the wall clock, to read a server's own logs and counters over the same seconds
            "timed_window_unix": ([round(self.started_unix, 3), round(self.started_unix + self.duration_s, 3)]
                                  if self.started_unix is not None else None),
        }

    def check(self) -> None:
        failed, total = len(self.failed), len(self.records)
        if failed / total > self.spec.max_error_rate:
            kinds = ", ".join(f"{kind} x{n}" for kind, n in self.errors.items())
            example = self.failed[0].error or ""
            raise LoadFailed(f"{failed} of {total} requests failed ({failed / total:.1%} > the allowed"
                             f" {self.spec.max_error_rate:.1%}): {kinds}; first: {example}"[:500])


def plan(spec: LoadSpec, counting: TokenCounting) -> Plan:
    target = Target.parse(spec.url)
    request_headers = client.headers()

    def prepared(prompt) -> tuple[bytes, int | None]:
        body = client.payload(spec, prompt, counting.fields)
        return target.request("POST", body, request_headers), prompt.tokens

    warm = prompts.build(spec, spec.warmup_requests, stream="warmup")
    timed = prompts.build(spec, spec.requests)
    due = arrivals.schedule(spec.requests, spec.rate, spec.burstiness, spec.seed) if spec.rate is not None else None
    return Plan(spec, [prepared(p) for p in timed], [prepared(p) for p in warm], due, counting.way)


def run_load(spec: LoadSpec, progress: Progress | None = None, check: bool = True,
             on_timed: Callable[[], None] = lambda: None) -> LoadRun:
    """Send the spec's load and return what happened; with check, fail past the allowed error rate.
    on_timed runs once the warm-up is over, before the first timed request (a server's counters read there
    are the timed requests' own)."""
    progress = progress or (lambda *args, **kwargs: None)
    server = server_id.identify(spec.base_url)
    counting = token_counts.detect(spec, server) if spec.count_tokens == "auto" else \
        token_counts.given(spec.count_tokens, server)
    load = plan(spec, counting)
    processes = spec.client_processes()
    names = server_gauges.GAUGES.get(server.kind or "")
    sampler = server_gauges.GaugeSampler(server.root, names) if names else None

    def timed() -> None:
        on_timed()
        if sampler is not None:
            sampler.begin()

    try:
        if processes == 1:
            ticker = Ticker(progress, len(load.bodies))
            progress("warmup", 0, len(load.warm_bodies))

            def start() -> None:
                timed()
                progress("timed", 0, len(load.bodies))

            shares = [asyncio.run(drive_share(load, 0, 1, LocalCounter(), ticker.tick, time.thread_time,
                                              on_start=start))]
        else:
            shares = fanout.run_shares(load, processes, progress, timed)
    finally:
        gauges = sampler.stop() if sampler is not None else Gauges(
            note=f"{server.said or 'the server'}: no gauges of its running and waiting requests are known")
    records: list[RequestRecord | None] = [None] * len(load.bodies)
    for share in shares:
        for record in share.records:
            records[record.index] = record
    started, ended = min(s.started for s in shares), max(s.ended for s in shares)
    run = LoadRun(spec=spec, records=records, warmup=sorted((r for s in shares for r in s.warmup),
                                                           key=lambda r: r.index),
                  duration_s=ended - started,
                  started_unix=time.time() - (time.perf_counter() - started),
                  client_cpu_s=sum(s.cpu_s for s in shares),
                  clients=[ClientShare(s.cpu_s, s.ended - s.started, s.peak_rss_bytes, s.timed_connections)
                           for s in shares], counting=counting,
                  gauges=gauges.within(started, ended))
    if check:
        run.check()
    return run


