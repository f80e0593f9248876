"""Per-run metrics from per-request records, defined as the serving studies (and vLLM's benchmark) do.

TTFT: send -> first chunk carrying a token. TPOT: (last token - first token) / (output tokens - 1),
per request. ITL: per token, pooled over requests (a chunk of k tokens spreads the gap before it over them, client.py);
the chunk gap is the gap between chunks, whatever they carry (vLLM's benchmark's ITL). E2E: send -> end of stream.
Per-user tokens/s: 1000 / median TPOT in ms. Throughput: ok requests and their output tokens (the
server's count) over the wall time of the timed phase. Percentiles interpolate linearly (numpy's
default, as vLLM's benchmark). $ per 1M output tokens comes from output_tokens_per_s and the hourly
price (the catalog's cost basis), so it is not here.

Open loop: the schedule delay (sent - due; the pacer's lateness plus any wait for an in-flight slot), the
E2E from the due time (what a user arriving then waits), and the achieved against the requested rate. A
p99 of fewer than P99_MIN_REQUESTS requests is a handful of them: `p99_requests` says how many it rests on.
The client's share of a core (its busiest process) and `client_bound` (1 when that share passes
data/verdict_thresholds.csv's client_saturated, AIPerf's rule) say whether the load generator was the limit; its
peak memory, and the requests it held in flight on average (Little's law: the requests' E2Es summed over the timed
phase), against the server's own gauges of requests running and waiting where it has them (server_gauges.py), say
whether the server was given the load asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpubench.loadgen.client import RequestRecord
from gpubench.stats import percentile
from gpubench.verdict_thresholds import thresholds
from gpubench.workload import MetricDef

PERCENTILES = (50, 90, 95, 99)
LATENCIES = ("ttft", "tpot", "itl", "chunk_gap", "e2e")
OPEN_LOOP_LATENCIES = ("schedule_delay", "e2e_from_schedule")
P99_MIN_REQUESTS = 1000

LATENCY_HELP = {
    "ttft": "time to first token: request sent until the first streamed token",
    "tpot": "time per output token after the first: (e2e - ttft) / (tokens - 1), per request",
    "itl": "inter-token latency, per token: a chunk of k tokens spreads the gap before it over the k",
    "chunk_gap": "time between streamed chunks, whatever each carries (vLLM's benchmark's ITL)",
    "e2e": "end-to-end: request sent until the last token",
    "schedule_delay": "open loop: request sent minus when it was due (pacer lateness and waits for a slot)",
    "e2e_from_schedule": "open loop: end-to-end from when the request was due, the client's queueing included",
}

LOAD_METRICS: dict[str, MetricDef] = {
    "requests_per_s": MetricDef("requests/s", "higher", "completed requests per second of the timed phase"),
    "output_tokens_per_s": MetricDef("tokens/s", "higher", "generated tokens per second, all users together"),
    "per_user_tokens_per_s": MetricDef("tokens/s", "higher", "tokens per second one user sees (1 / median tpot)"),
    **{f"{name}_ms_p{p}": MetricDef("ms", "lower", f"{p}th percentile of {LATENCY_HELP[name]}")
       for name in LATENCIES + OPEN_LOOP_LATENCIES for p in PERCENTILES},
    # the mean beside the percentiles: vLLM's benchmark and AIPerf report it, and where a closed loop's fixed-length
    # requests go in waves the TTFT median moves with their alignment while the mean holds
    **{f"{name}_ms_mean": MetricDef("ms", "lower", f"mean of {LATENCY_HELP[name]}") for name in LATENCIES},
    "p99_requests": MetricDef("requests", None, f"ok requests the p99s rest on (under {P99_MIN_REQUESTS:,} a p99 is"
                              " the slowest few requests)"),
    "requested_rate": MetricDef("requests/s", None, "open loop: the arrival rate asked for"),
    "achieved_rate": MetricDef("requests/s", "higher", "open loop: requests sent over the span from the first send"
                               " to the last, times (n - 1) / n"),
    "client_processes": MetricDef("processes", None, "client processes the load was split over"),
    "client_cpu_pct": MetricDef("% of a core", "lower", "the busiest client process's CPU time over its wall time"),
    "client_bound": MetricDef("flag", "lower", "1 when a client process passed client_saturated of a core: the"
                              " result may measure the load generator, not the server"),
    "requests_ok": MetricDef("requests", None, "requests that completed with a valid stream"),
    "requests_failed": MetricDef("requests", "lower", "requests that failed (HTTP error, timeout, broken stream)"),
    "error_rate": MetricDef("fraction", "lower", "requests_failed / all timed requests"),
    "usage_mismatches": MetricDef("requests", "lower", "requests whose server-reported token counts differ from ours"),
    "prompt_tokens_mean": MetricDef("tokens", None, "mean prompt tokens per request, as the server counted them"),
    "completion_tokens_mean": MetricDef("tokens", None, "mean generated tokens per request"),
    "client_cpu_us_per_token": MetricDef("us/token", "lower",
                                         "the load generator's own CPU per token: a check it was not the bottleneck"),
    "client_rss_mib": MetricDef("MiB", "lower", "the client processes' peak resident memory, together"),
    "client_in_flight_mean": MetricDef("requests", None, "requests the client had in flight on average over the"
                                       " timed phase (their E2Es summed over its duration)"),
    "server_running_mean": MetricDef("requests", None, "the server's own gauge of requests running (vLLM's"
                                     " vllm:num_requests_running), mean of its samples over the timed phase"),
    "server_waiting_mean": MetricDef("requests", None, "the server's own gauge of requests queued (vLLM's"
                                     " vllm:num_requests_waiting), mean of its samples over the timed phase"),
}


def client_saturated_pct() -> float:
    return thresholds()["client_saturated"]


@dataclass(frozen=True)
class Distribution:
    n: int
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution | None:
        if not values:
            return None
        return cls(len(values), sum(values) / len(values), *(percentile(values, p) for p in PERCENTILES))


def latencies_ms(records: Sequence[RequestRecord]) -> dict[str, Distribution | None]:
    ok = [r for r in records if r.ok]
    return {
        "ttft": Distribution.of([r.ttft_s * 1e3 for r in ok]),
        "tpot": Distribution.of([r.tpot_s * 1e3 for r in ok if r.tpot_s is not None]),
        "itl": Distribution.of([gap * 1e3 for r in ok for gap in r.itl_s]),
        "chunk_gap": Distribution.of([gap * 1e3 for r in ok for gap in r.chunk_gaps_s]),
        "e2e": Distribution.of([r.e2e_s * 1e3 for r in ok]),
    }


def streamed_pct(records: Sequence[RequestRecord]) -> float | None:
    """tokens_streamed_pct: tokens that arrived as chunks over the server's count, over the ok requests that
    have a server count (None when none has)."""
    counted = [r for r in records if r.ok and r.completion_tokens is not None]
    expected = sum(r.completion_tokens for r in counted)
    return 100.0 * sum(r.tokens_received for r in counted) / expected if expected else None


def summarize(records: Sequence[RequestRecord], duration: float, client_cpu_s: float | None = None,
              rate: float | None = None, client_cpu_pcts: Sequence[float] = ()) -> dict[str, float]:
    """LOAD_METRICS for one timed phase of `duration` seconds (a latency is left out when no request
    measured it; client_cpu_us_per_token needs the client's CPU seconds over the phase; the open-loop
    figures need the requested `rate`; the client's share its processes' CPU shares)."""
    ok = [r for r in records if r.ok]
    failed = len(records) - len(ok)
    out: dict[str, float] = {
        "requests_ok": len(ok),
        "requests_failed": failed,
        "error_rate": failed / len(records) if records else 0.0,
        "usage_mismatches": sum(r.usage_mismatch is not None for r in ok),
        "requests_per_s": len(ok) / duration,
        "output_tokens_per_s": sum(r.output_tokens for r in ok) / duration,
    }
    if ok:
        prompt = [r.prompt_tokens if r.prompt_tokens is not None else r.prompt_tokens_sent for r in ok]
        if None not in prompt:
            out["prompt_tokens_mean"] = sum(prompt) / len(ok)
        out["completion_tokens_mean"] = sum(r.output_tokens for r in ok) / len(ok)
    for name, dist in latencies_ms(records).items():
        if dist is None:
            continue
        for p in PERCENTILES:
            out[f"{name}_ms_p{p}"] = getattr(dist, f"p{p}")
        out[f"{name}_ms_mean"] = dist.mean
    if ok:
        out["p99_requests"] = len(ok)
    if duration > 0:
        out["client_in_flight_mean"] = sum(r.e2e_s for r in records if r.e2e_s is not None) / duration
    if rate is not None:
        out["requested_rate"] = rate
        sent = sorted(r.sent for r in records if r.sent is not None)
        if len(sent) > 1 and sent[-1] > sent[0]:
            out["achieved_rate"] = (len(sent) - 1) / (sent[-1] - sent[0])
        sent_records = [r for r in records if r.sent is not None]
        for name, values in (("schedule_delay", [r.schedule_delay_s * 1e3 for r in sent_records]),
                             ("e2e_from_schedule", [r.e2e_from_schedule_s * 1e3 for r in ok])):
            if values:
                for p in PERCENTILES:
                    out[f"{name}_ms_p{p}"] = percentile(values, p)
    if client_cpu_pcts:
        busiest = max(client_cpu_pcts)
        out.update(client_processes=len(client_cpu_pcts), client_cpu_pct=busiest,
                   client_bound=float(busiest > client_saturated_pct()))
    if "tpot_ms_p50" in out and out["tpot_ms_p50"] > 0:
        out["per_user_tokens_per_s"] = 1000.0 / out["tpot_ms_p50"]
    received = sum(r.tokens_received for r in records)
    if client_cpu_s is not None and received:
        out["client_cpu_us_per_token"] = client_cpu_s / received * 1e6
    return out
