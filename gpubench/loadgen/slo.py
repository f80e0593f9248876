"""Serving at a latency target: which requests met it (goodput), whether a load level met it, the highest load that did.

A target is a p99 time to first token and a p99 time per output token (MLPerf's Server scenario; its values are in
data/slo_targets.csv). A request meets it when its own TTFT and TPOT are both within it (vLLM's `--goodput`); goodput is
those requests, and the output tokens they carried, per second of the timed phase. A load level meets it when the p99s
of its requests do (MLPerf's rule). The highest load that meets it is the largest level that passed (vLLM's
`bench sweep serve_sla`: the maximum passing value), whether or not a lower one failed by noise.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from gpubench.schema import COST_ROLE
from gpubench.workload import MetricDef

if TYPE_CHECKING:  # only its fields are read: ok, ttft_s, tpot_s, output_tokens
    from gpubench.loadgen.client import RequestRecord

TTFT_FIELD, TPOT_FIELD = "slo_ttft_p99_ms", "slo_tpot_p99_ms"  # the serving configs' fields


class TargetError(ValueError):
    """A target that cannot be read; str() is one line."""


@dataclass(frozen=True)
class Target:
    ttft_ms: float  # p99 time to first token
    tpot_ms: float  # p99 time per output token
    source: str = ""  # where the numbers come from, when they are a preset

    def describe(self) -> str:
        text = f"p99 TTFT <= {self.ttft_ms:,.0f} ms and p99 TPOT <= {self.tpot_ms:,.0f} ms"
        return f"{text} ({self.source})" if self.source else text

    @property
    def per_user_tokens_per_s(self) -> float:
        """The per-user speed a request at exactly the TPOT target sees (1000 / TPOT)."""
        return 1000.0 / self.tpot_ms


@cache
def presets() -> dict[str, Target]:
    text = resources.files("gpubench").joinpath("data", "slo_targets.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {r["name"]: Target(float(r["ttft_p99_ms"]), float(r["tpot_p99_ms"]), r["source"]) for r in rows}


def preset(name: str) -> Target:
    return presets()[name]


def parse(text: str) -> Target:
    """A preset's name ("server", "interactive") or "ttft=MS,tpot=MS"."""
    if not text.strip():  # `--slo "$SLO"` with SLO unset: refused, or no target would pass unnoticed
        raise TargetError(f"--slo {text!r}: empty; use one of {', '.join(presets())} or ttft=MS,tpot=MS (p99s in ms)")
    if text in presets():
        return preset(text)
    found = dict(re.findall(r"(ttft|tpot)\s*=\s*([0-9.]+)", text))
    if not re.fullmatch(r"\s*(ttft|tpot)\s*=\s*[0-9.]+\s*(,\s*(ttft|tpot)\s*=\s*[0-9.]+\s*)?", text) or len(found) != 2:
        raise TargetError(f"--slo {text!r}: use one of {', '.join(presets())} or ttft=MS,tpot=MS (p99s in ms)")
    try:
        target = Target(float(found["ttft"]), float(found["tpot"]))
    except ValueError:
        raise TargetError(f"--slo {text!r}: the values must be numbers of ms") from None
    if not (0 < target.ttft_ms < math.inf and 0 < target.tpot_ms < math.inf):  # 400 nines read as inf
        raise TargetError(f"--slo {text!r}: the targets must be positive, finite numbers of ms")
    return target


def of_config(config: object) -> Target | None:
    """The target a serving config (a dataclass, or a run's stored config dict) asked for; None where it has none."""
    get = config.get if isinstance(config, dict) else lambda name: getattr(config, name, None)
    ttft, tpot = get(TTFT_FIELD), get(TPOT_FIELD)
    if ttft is None or tpot is None:
        return None
    named = next((p for p in presets().values() if (p.ttft_ms, p.tpot_ms) == (float(ttft), float(tpot))), None)
    return named or Target(float(ttft), float(tpot))


SLO_METRICS: dict[str, MetricDef] = {
    "slo_met": MetricDef("yes=1", "higher", "1 when this load's p99 TTFT and p99 TPOT are both within the latency"
                         " target (config slo_ttft_p99_ms, slo_tpot_p99_ms), else 0"),
    "slo_requests_met_pct": MetricDef("%", "higher", "ok requests whose own TTFT and TPOT were both within the target"),
    "goodput_requests_per_s": MetricDef("requests/s", "higher", "requests that met the latency target, per second"),
    "goodput_tokens_per_s": MetricDef("tokens/s", "higher", "output tokens of the requests that met the target,"
                                      " per second"),
}

# Derived across a concurrency sweep (the workload's derive), on the setup of the highest load that met the target
SWEEP_METRICS: dict[str, MetricDef] = {
    "slo_max_users": MetricDef("users", "higher", "the highest concurrency of the sweep whose p99 TTFT and TPOT met"
                               " the latency target (0: none did; then on the lowest level's row)"),
    "slo_output_tokens_per_s": MetricDef("tokens/s", "higher", "output tokens/s at that highest load"),
    "slo_usd_per_1M_output_tokens": MetricDef("USD/1M output tokens", "lower", "cost per 1M output tokens at that"
                                              " highest load, at the run's hourly price", role=COST_ROLE),
}

# The highest load under the target found by search (loadgen/search.py), on its result
SEARCH_METRICS: dict[str, MetricDef] = {
    "slo_max_rate": MetricDef("requests/s", "higher", "the highest arrival rate whose p99 TTFT and TPOT met the latency"
                              " target, found by search (0: none did); the result's other figures are that load's"),
    "slo_search_bracket_pct": MetricDef("%", "lower", "how far the lowest failing value lay above the answer: the"
                                        " search's precision (within its tolerance when it converged)"),
    "slo_search_probes": MetricDef("loads", None, "loads the search ran, the saturation one included"),
}


def request_meets(record: RequestRecord, target: Target) -> bool:
    """Both of the request's own latencies within the target (a one-token answer has no TPOT: TTFT alone)."""
    if not record.ok or record.ttft_s is None or record.ttft_s * 1e3 > target.ttft_ms:
        return False
    return record.tpot_s is None or record.tpot_s * 1e3 <= target.tpot_ms


def goodput(records: Sequence[RequestRecord], duration_s: float, target: Target) -> dict[str, float]:
    """The requests of one timed phase that met the target, and the tokens they carried, per second."""
    ok = [r for r in records if r.ok]
    met = [r for r in ok if request_meets(r, target)]
    out = {"goodput_requests_per_s": len(met) / duration_s,
           "goodput_tokens_per_s": sum(r.output_tokens for r in met) / duration_s}
    if ok:
        out["slo_requests_met_pct"] = 100.0 * len(met) / len(ok)
    return out


def level_meets(metrics: dict[str, float], target: Target) -> bool | None:
    """Whether a load level's p99s are within the target; None when it has no TTFT to judge by."""
    if "ttft_ms_p99" not in metrics:
        return None
    tpot = metrics.get("tpot_ms_p99")
    return metrics["ttft_ms_p99"] <= target.ttft_ms and (tpot is None or tpot <= target.tpot_ms)


def level_metrics(records: Sequence[RequestRecord], duration_s: float, metrics: dict[str, float],
                  target: Target) -> dict[str, float]:
    """SLO_METRICS of one load level, from its requests and the summary metrics already computed from them."""
    out = goodput(records, duration_s, target)
    met = level_meets(metrics, target)
    if met is not None:
        out["slo_met"] = float(met)
    return out


@dataclass(frozen=True)
class Level:
    setup: str
    users: int
    metrics: dict[str, float]


def highest_load(levels: Sequence[Level], target: Target) -> Level | None:
    """The level with the most users whose p99s met the target; None when none did."""
    passing = [level for level in levels if level_meets(level.metrics, target)]
    return max(passing, key=lambda level: level.users, default=None)


def sweep(levels: Sequence[Level], target: Target) -> dict[str, dict[str, float]]:
    """SWEEP_METRICS for a workload's derive: {setup: metrics} on the highest passing level, or slo_max_users 0 on
    the lowest level when none passed. Empty when no level could be judged."""
    judged = [level for level in levels if level_meets(level.metrics, target) is not None]
    if not judged:
        return {}
    best = highest_load(judged, target)
    if best is None:
        return {min(judged, key=lambda level: level.users).setup: {"slo_max_users": 0.0}}
    out = {"slo_max_users": float(best.users)}
    if "output_tokens_per_s" in best.metrics:
        out["slo_output_tokens_per_s"] = best.metrics["output_tokens_per_s"]
    if "usd_per_1M_output_tokens" in best.metrics:
        out["slo_usd_per_1M_output_tokens"] = best.metrics["usd_per_1M_output_tokens"]
    return {best.setup: out}
