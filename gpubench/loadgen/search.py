"""The highest load that meets a latency target, found by search (after vLLM's `bench sweep serve_sla`).

What is searched: the arrival rate of an open loop (requests/s, Poisson unless the spec's burstiness says otherwise;
the spec's `users`, when given, caps those in flight) or the number of users of a closed loop. A probe is one load of
the spec's `requests` timed requests at one value, with fresh prompts, judged as a load level is (slo.level_meets:
its p99 TTFT and p99 TPOT within the target); a load whose share of failed requests passes the spec's limit fails.

How, as the first version of vLLM's serve_sla does it:
1. saturation: every request at once (at most `users` in flight). Its throughput is the start: the request rate for
   a rate search, and by Little's law that rate x the mean E2E (the mean number in flight) for users. Met even then,
   there is no higher load to try, and the search stops.
2. bracket: from the start, double while the target is met, halve while it is not (rates down to START_FLOOR of the
   start: a probe of n requests at r/s lasts n/r s; users down to 1), until a value passes and one above it fails.
3. bisect between the highest passing and the lowest failing value until they are within the tolerance: rates when
   failing <= passing x (1 + tolerance), users when failing - passing <= max(1, tolerance x passing).
The answer is the highest value that passed. Where the latency grows with the load, the highest load that meets the
target lies between it and the lowest failing value, so the answer is within the tolerance below it. Every probe is
kept for the result's table; at most max_probes are run (the saturation one included).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from gpubench.loadgen import slo
from gpubench.loadgen.metrics import P99_MIN_REQUESTS
from gpubench.loadgen.run import LoadFailed, LoadRun, run_load
from gpubench.loadgen.spec import LoadSpec

Variable = Literal["rate", "users"]
WHAT = {"rate": "the highest arrival rate", "users": "the most concurrent users"}
TOLERANCE = 0.05  # the default: the answer is within 5% (rates) of the highest load that meets the target
MAX_PROBES = 12  # saturation + ~3 to bracket + ~5 to bisect a 2x bracket to 5%
START_FLOOR = 1 / 16  # a rate search halves down to this share of its start, then says none met
SATURATION_WARMUP = 64  # warm-up requests before the saturation probe, at most: it opens the connections and wakes
# the server; 2 x the concurrency (the spec's default) would be 2 x the requests when every request goes at once



class SearchFailed(RuntimeError):
    """The search could not go on (a probe's warm-up failed, its saturation load had no ok request); str() is one
    line, and `probes` holds what was measured before."""

    def __init__(self, message: str, probes: list[Probe]):
        super().__init__(message)
        self.probes = probes


@dataclass(frozen=True)
class SearchSpec:
    """What to search and how finely; `target` is the latency target every probe is judged at."""

    variable: Variable
    target: slo.Target
    tolerance: float = TOLERANCE
    max_probes: int = MAX_PROBES

    def setup_name(self, cap: int | None) -> str:
        """search-rate, search-rate-u64 (at most 64 in flight) or search-users."""
        return f"search-{self.variable}" + (f"-u{cap}" if cap and self.variable == "rate" else "")


@dataclass
class Probe:
    """One load of the search: its value, figures and verdict. The saturation load sends every request at once: its
    value is its users for a users search, None (no rate) for a rate search."""

    value: float | None
    metrics: dict[str, float]
    met: bool
    error: str | None = None  # the load failed (too many failed requests): judged as not met
    saturation: bool = False
    run: LoadRun | None = field(default=None, repr=False, compare=False)

    def row(self, variable: str) -> dict:
        m = self.metrics
        out = {variable: "all at once" if self.value is None else self.value, "met": self.met,
               "requests_ok": int(m.get("requests_ok", 0))}
        if self.saturation:
            out["saturation"] = True
        for name in ("ttft_ms_p99", "tpot_ms_p99", "goodput_tokens_per_s", "output_tokens_per_s", "requests_per_s",
                     "achieved_rate"):
            if name in m:
                out[name] = round(m[name], 3)
        if self.run is not None:
            out["seconds"] = round(self.run.duration_s, 3)
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Found:
    """The search's outcome: the highest passing probe (None: none passed), the lowest failing one above it, every
    probe in the order run, and why it stopped."""

    spec: SearchSpec
    probes: list[Probe]
    best: Probe | None
    failing: Probe | None
    stopped: str

    @property
    def value(self) -> float:
        """The answer: the highest value that passed (0 when none did); for a rate search met with every request at
        once, the rate that load achieved."""
        if self.best is None:
            return 0.0
        if self.best.value is None:
            return self.best.metrics.get("requests_per_s", 0.0)
        return self.best.value

    def metrics(self) -> dict[str, float]:
        name = "slo_max_rate" if self.spec.variable == "rate" else "slo_max_users"
        out = {name: float(self.value), "slo_search_probes": float(len(self.probes))}
        if self.best is not None and self.failing is not None and self.best.value and self.failing.value:
            out["slo_search_bracket_pct"] = 100.0 * (self.failing.value / self.best.value - 1)
        return out

    def info(self, requests: int) -> dict:
        low = (f"; a p99 of {requests:,} requests (fewer than {P99_MIN_REQUESTS:,}) is the slowest few of them"
               if requests < P99_MIN_REQUESTS else "")
        return {"variable": self.spec.variable, "target": self.spec.target.describe(),
                "tolerance_pct": round(100 * self.spec.tolerance, 3), "max_probes": self.spec.max_probes,
                "requests_per_probe": requests, "stopped": self.stopped,
                "found": self.value if self.best is not None else None,
                "lowest_failing": self.failing.value if self.failing is not None else None,
                "how": "every request at once, then doubled or halved from its throughput until one value met the"
                       " target and one failed, then bisected (gpubench/loadgen/search.py)" + low,
                "probes": [{"probe": k, **p.row(self.spec.variable)} for k, p in enumerate(self.probes, 1)]}


def find(measure: Callable[[float | None], Probe], spec: SearchSpec, requests: int,
         say: Callable[[str], None] = lambda line: None) -> Found:
    """Run probes through `measure(value)` (None: the saturation load, whose Probe says the value it ran at) until
    the answer is within the tolerance. `requests` is each probe's count: a users search probes fewer users."""
    users = spec.variable == "users"
    probes: list[Probe] = []

    def probe(value: float | None) -> Probe:
        try:
            result = measure(value)
        except (LoadFailed, OSError, ValueError) as exc:
            what = "every request at once" if value is None else _fmt(value, spec.variable)
            raise SearchFailed(f"probe {len(probes) + 1} ({what}): {exc}"[:500], probes) from exc
        probes.append(result)
        say(describe(result, spec.variable, len(probes)))
        return result

    saturated = probe(None)
    if saturated.met:
        return Found(spec, probes, saturated, None, "met with every request at once: no higher load to try")
    start = estimate(saturated, spec.variable)
    if start is None:
        raise SearchFailed(f"the saturation load had no ok request to start from: {saturated.error or 'no figures'}",
                           probes)
    passing: Probe | None = None
    failing: Probe = saturated  # a rate search's saturation load has no value: an infinite rate
    ceiling = math.inf if not users else float(requests)
    floor = 1.0 if users else start * START_FLOOR
    value = min(max(1.0, round(start)), ceiling - 1) if users else float(f"{start:.4g}")
    if users and value < 1:  # one request per probe: nothing below "all at once" to try
        return Found(spec, probes, None, saturated, "none met: a probe of one request has no fewer users to try")
    while True:
        if len(probes) >= spec.max_probes:
            stopped = f"stopped after {spec.max_probes} probes, the most allowed, before the tolerance"
            break
        result = probe(value)
        if result.met:
            passing = result if passing is None or value > passing.value else passing
        elif failing.value is None or value < failing.value:
            failing = result
        high = ceiling if failing.value is None else failing.value
        if passing is None:
            value = high // 2 if users else high / 2
            if value < floor:
                stopped = (f"none met: the lowest value tried, {_fmt(high, spec.variable)}, missed the target"
                           + ("" if users else f" (halving stops at 1/{1 / START_FLOOR:.0f} of the start)"))
                break
        elif math.isinf(high):
            value = 2 * passing.value
        elif _within(passing.value, high, spec):
            stopped = f"within the tolerance: {_fmt(passing.value, spec.variable)} met the target and" \
                      f" {_fmt(high, spec.variable)} did not"
            break
        else:
            value = _between(passing.value, high, users)
    return Found(spec, probes, passing, failing if failing.value is not None else None, stopped)


def estimate(saturated: Probe, variable: str) -> float | None:
    """The start from the saturation load (vLLM's _estimate_sla_value): its request rate, or for users the mean
    number in flight by Little's law (rate x mean E2E)."""
    rate = saturated.metrics.get("requests_per_s")
    if not rate:
        return None
    if variable == "rate":
        return rate
    e2e_ms = saturated.metrics.get("e2e_ms_mean")
    return None if e2e_ms is None else rate * e2e_ms / 1e3


def _within(low: float, high: float, spec: SearchSpec) -> bool:
    if spec.variable == "users":
        return high - low <= max(1, math.floor(spec.tolerance * low))
    return high <= low * (1 + spec.tolerance)


def _between(low: float, high: float, users: bool) -> float:
    if users:
        return float((int(low) + int(high)) // 2)
    middle = (low + high) / 2
    rounded = float(f"{middle:.4g}")  # readable setup names and tables; exact where rounding leaves the bracket
    return rounded if low < rounded < high else middle


def _fmt(value: float, variable: str) -> str:
    return f"{value:g} requests/s" if variable == "rate" else f"{value:g} users"


def describe(probe: Probe, variable: str, number: int) -> str:
    """One line per probe, as it is run."""
    m = probe.metrics
    what = _fmt(probe.value, variable) if probe.value is not None else "any rate"
    what = f"every request at once ({what})" if probe.saturation else what
    figures = ", ".join(f"{label} {m[name]:,.1f} ms" for name, label in (("ttft_ms_p99", "p99 TTFT"),
                                                                          ("tpot_ms_p99", "p99 TPOT")) if name in m)
    verdict = "met" if probe.met else "missed"
    return f"  probe {number}: {what}: {figures or 'no latencies'}: {verdict}" + (f" ({probe.error})"
                                                                                  if probe.error else "")


def probe_seed(seed: int, index: int) -> int:
    """Fresh random prompts per probe (a server's prefix cache never sees a probe's prompts twice), the same for a
    given run seed and probe number."""
    return int.from_bytes(hashlib.sha256(f"{seed}/probe{index}".encode()).digest()[:4], "big")


def probe_spec(base: LoadSpec, variable: str, value: float | None, cap: int | None, seed: int) -> LoadSpec:
    """The load of one probe: `base` (its requests, prompts, server) at `value` (None: every request at once, at
    most `cap` in flight)."""
    if value is None:
        warmup = base.warmup if base.warmup is not None else min(SATURATION_WARMUP, 2 * (cap or base.requests))
        return dataclasses.replace(base, users=cap or base.requests, rate=None, warmup=warmup, seed=seed)
    if variable == "rate":
        return dataclasses.replace(base, rate=value, users=cap, seed=seed)
    return dataclasses.replace(base, users=int(value), rate=None, seed=seed)


def measure_probe(spec: LoadSpec, value: float | None, target: slo.Target, progress=None,
                  on_timed: Callable[[], None] = lambda: None, saturation: bool = False) -> Probe:
    """One probe's load at `value`, judged at the target. Its timed part is reported as phase "probe" (a setup's timed
    phase is its result's load, not a probe's)."""
    def reported(phase, done=None, total=None, message=None):
        if progress is not None:
            progress("probe" if phase == "timed" else phase, done, total, message)

    run = run_load(spec, progress=reported, check=False, on_timed=on_timed)
    metrics = run.metrics()
    metrics.update(slo.level_metrics(run.records, run.duration_s, metrics, target))
    error = None
    try:
        run.check()
    except LoadFailed as exc:
        error = str(exc)
    met = error is None and bool(slo.level_meets(metrics, target))
    return Probe(value, metrics, met, error, saturation, run)


def run(base: LoadSpec, spec: SearchSpec, cap: int | None = None, progress=None,
        say: Callable[[str], None] = lambda line: None) -> Found:
    """The search against `base`'s server: each probe is `base` at one value (probe_spec), with its own prompts."""
    def measure(value: float | None) -> Probe:
        index = len(seen)
        seen.append(value)
        load = probe_spec(base, spec.variable, value, cap, probe_seed(base.seed, index))
        ran_at = value if value is not None or spec.variable == "rate" else float(load.users)
        label = "every request at once" if value is None else _fmt(value, spec.variable)

        def reported(phase, done=None, total=None, message=None):
            if progress is not None:
                progress(phase, done, total, message or f"probe {index + 1}: {label}")

        return measure_probe(load, ran_at, spec.target, reported, saturation=value is None)

    seen: list[float | None] = []
    return find(measure, spec, base.requests, say)
