"""Per-run metrics from per-request records, defined as the serving studies (and vLLM's benchmark) do.

TTFT: send -> first chunk carrying a token. TPOT: (last token - first token) / (output tokens - 1),
per request. ITL: every gap between token chunks, pooled over requests. E2E: send -> end of stream.
Per-user tokens/s: 1000 / median TPOT in ms. Throughput: ok requests and their output tokens (the
server's count) over the wall time of the timed phase. Percentiles interpolate linearly (numpy's
default, as vLLM's benchmark). $ per 1M output tokens comes from output_tokens_per_s and the hourly
price (the catalog's cost basis), so it is not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpubench.loadgen.client import RequestRecord
from gpubench.results.stats import percentile
from gpubench.workload import MetricDef

PERCENTILES = (50, 90, 95, 99)
LATENCIES = ("ttft", "tpot", "itl", "e2e")

LATENCY_HELP = {
    "ttft": "time to first token: request sent until the first streamed token",
    "tpot": "time per output token after the first: (e2e - ttft) / (tokens - 1), per request",
    "itl": "inter-token latency: every gap between streamed tokens",
    "e2e": "end-to-end: request sent until the last token",
}

LOAD_METRICS: dict[str, MetricDef] = {
    "requests_per_s": MetricDef("requests/s", "higher", "completed requests per second of the timed phase"),
    "output_tokens_per_s": MetricDef("tokens/s", "higher", "generated tokens per second, all users together"),
    "per_user_tokens_per_s": MetricDef("tokens/s", "higher", "tokens per second one user sees (1 / median tpot)"),
    **{f"{name}_ms_p{p}": MetricDef("ms", "lower", f"{p}th percentile of {LATENCY_HELP[name]}")
       for name in LATENCIES for p in PERCENTILES},
    "requests_ok": MetricDef("requests", None, "requests that completed with a valid stream"),
    "requests_failed": MetricDef("requests", "lower", "requests that failed (HTTP error, timeout, broken stream)"),
    "error_rate": MetricDef("fraction", "lower", "requests_failed / all timed requests"),
    "usage_mismatches": MetricDef("requests", "lower", "requests whose server-reported token counts differ from ours"),
    "prompt_tokens_mean": MetricDef("tokens", None, "mean prompt tokens per request, as the server counted them"),
    "completion_tokens_mean": MetricDef("tokens", None, "mean generated tokens per request"),
    "client_cpu_us_per_token": MetricDef("us/token", "lower",
                                         "the load generator's own CPU per token: a check it was not the bottleneck"),
}


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
        "e2e": Distribution.of([r.e2e_s * 1e3 for r in ok]),
    }


def summarize(records: Sequence[RequestRecord], duration: float, client_cpu_s: float | None = None) -> dict[str, float]:
    """LOAD_METRICS for one timed phase of `duration` seconds (a latency is left out when no request
    measured it; client_cpu_us_per_token needs the client's CPU seconds over the phase)."""
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
    if "tpot_ms_p50" in out and out["tpot_ms_p50"] > 0:
        out["per_user_tokens_per_s"] = 1000.0 / out["tpot_ms_p50"]
    received = sum(r.tokens_received for r in records)
    if client_cpu_s is not None and received:
        out["client_cpu_us_per_token"] = client_cpu_s / received * 1e6
    return out
