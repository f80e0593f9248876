"""Two runs of one workload side by side: per setup and metric, the ratio and whether it is beyond noise.

Noise is what the runs measured: a difference counts only when it exceeds twice the larger CV of the
two (over their repeats), and never less than the floor (`--noise`, default 5%: single runs carry no
spread of their own, and the studies call differences under 5 to 10% noise). With one repeat on either side
(n=1) no spread is known: any difference is shown as it is, "no verdict (n=1)", never better, worse or within noise
(nothing was measured to say what noise is); only equal numbers are "within noise".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpubench.results import verdict as bound
from gpubench.results.stored_runs import StoredRun
from gpubench.schema import MetricSummary

NOISE_FLOOR = 0.05  # --noise's default
Verdict = Literal["better", "worse", "within noise", "changed", "no verdict (n=1)"]
NO_SPREAD = "no verdict (n=1)"


@dataclass
class Row:
    setup: str
    metric: str
    unit: str
    a: float
    b: float
    noise: float
    verdict: Verdict
    n: int = 2  # the fewer repeats of the two sides
    better: str | None = None  # "higher" or "lower", as the results carry it

    @property
    def ratio(self) -> float | None:
        return self.b / self.a if self.a else None


def compare(a: StoredRun, b: StoredRun, floor: float = NOISE_FLOOR) -> list[Row]:
    if a.workload != b.workload:
        raise ValueError(f"cannot compare a {a.workload} run with a {b.workload} run")
    directions = {**a.directions(), **b.directions()}
    b_setups = {s.setup: s for s in b.summary()}
    rows = []
    for sa in a.summary():
        sb = b_setups.get(sa.setup)
        if sb is None:
            continue
        for name, ma in sa.metrics.items():
            mb = sb.metrics.get(name)
            if mb is None:
                continue
            gap = noise(ma, mb, floor=floor)
            said = verdict(ma.median, mb.median, gap, directions.get(name))
            n = min(ma.n, mb.n)
            if n < 2 and ma.median != mb.median:
                said = NO_SPREAD
            rows.append(Row(sa.setup, name, ma.unit, ma.median, mb.median, gap, said, n, directions.get(name)))
    return rows


def noise(*summaries: MetricSummary, floor: float = NOISE_FLOOR) -> float:
    """The relative difference the numbers cannot tell apart: twice the larger CV, never under the floor."""
    return max(floor, 2 * max((s.cv or 0) for s in summaries))


def verdict(a: float, b: float, noise: float, better: str | None) -> Verdict:
    if a == b or (a and abs(b / a - 1) <= noise) or (not a and abs(b) <= noise):
        return "within noise"
    if better is None:
        return "changed"
    return "better" if (b > a) == (better == "higher") else "worse"


def regressions(rows: list[Row], metrics: list[str]) -> list[Row]:
    return [row for row in rows if row.metric in metrics and row.verdict == "worse"]


def unverified(rows: list[Row], metrics: list[str]) -> list[Row]:
    """Rows of these metrics that moved the worse way past the floor, with no spread to judge them by (n=1)."""
    return [row for row in rows if row.metric in metrics and row.verdict == NO_SPREAD
            and verdict(row.a, row.b, 0, row.better) == "worse"]


def verdicts(a: StoredRun, b: StoredRun) -> list[tuple[str, str, str]]:
    """(setup, what bounded it in A, in B) for the setups either run judged (gpubench/results/verdict.py)."""
    in_a, in_b = bound.per_setup(a.results), bound.per_setup(b.results)
    return [(setup, in_a.get(setup, ""), in_b.get(setup, "")) for setup in dict.fromkeys([*in_a, *in_b])]
