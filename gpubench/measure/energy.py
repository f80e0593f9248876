"""Energy over a timed part, from the readings the utilisation sampler took (gpubench/measure/nvml.py).

Per GPU, per interval between two readings inside the part: the difference of NVML's total-energy counter
where both readings have it and it went up; else the trapezoid of the two power readings (instantaneous where
the GPU reports it). So a counter that starts answering mid-run, or that wraps or resets between two readings,
costs only those intervals their counter figure, not the run's; a GPU without the counter is the power
integral throughout. The setup's figure sums the GPUs it used (its ranks); average watts are that over the
part's seconds. No reading of either kind (a CPU run, NVML absent): no figure, and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpubench.schema import ENERGY_PER_UNIT_ROLE, ENERGY_ROLE
from gpubench.workload import MetricDef

if TYPE_CHECKING:
    from gpubench.catalog import CostBasis

COUNTER, INTEGRAL = "NVML total-energy counter", "integral of sampled power"

METRICS = {
    "energy_j": MetricDef("J", "lower", "GPU energy over the timed part, summed over the GPUs the setup used",
                          role=ENERGY_ROLE),
    "avg_power_w": MetricDef("W", None, "energy_j over the timed part's seconds: the GPUs' average draw together",
                             role=ENERGY_ROLE),
}
PER_UNIT_PREFIX = "j_per_"  # the runner's joules per unit of the study's energy basis (gpubench/catalog.py)


def per_unit_definitions(basis: CostBasis | None) -> dict[str, MetricDef]:
    """The joules-per-unit metric the runner makes of an energy basis (j_per_image), declared."""
    if basis is None:
        return {}
    return {f"{PER_UNIT_PREFIX}{basis.unit.replace(' ', '_')}": MetricDef(
        f"J/{basis.unit}", "lower", f"GPU joules per {basis.unit} over the timed part", role=ENERGY_PER_UNIT_ROLE)}


@dataclass
class Energy:
    """One setup's energy: joules and seconds, or the reason there is none."""

    joules: float | None = None
    seconds: float | None = None
    gpus: list[int] = field(default_factory=list)
    source: str | None = None  # COUNTER, INTEGRAL, or both with the counter's share of the time
    absent: str | None = None
    power_integral_j: float | None = None  # the sampled power integrated over the same part: the counter's check

    def metrics(self) -> dict[str, float]:
        if self.joules is None or not self.seconds:
            return {}
        return {"energy_j": self.joules, "avg_power_w": self.joules / self.seconds}


def interval_joules(t0: float, a, t1: float, b) -> tuple[float | None, str | None]:
    """(joules, source) between two readings of one GPU; (None, None) when neither source covers it."""
    if a.energy_mj is not None and b.energy_mj is not None and b.energy_mj >= a.energy_mj:
        return (b.energy_mj - a.energy_mj) / 1000.0, COUNTER
    if a.power_w is not None and b.power_w is not None:
        return (a.power_w + b.power_w) / 2 * (t1 - t0), INTEGRAL
    return None, None


def over(intervals: list[tuple[float, list, float, list]], gpus: list[int]) -> Energy:
    """Energy over intervals (t0, readings at t0, t1, readings at t1), summed over the GPU indices `gpus`."""
    if not intervals:
        return Energy(absent="no interval of the timed part was sampled")
    joules, integral = 0.0, 0.0
    by_source: dict[str, float] = {}
    power_kinds: set[str] = set()
    for t0, before, t1, after in intervals:
        for g in gpus:
            j, source = interval_joules(t0, before[g], t1, after[g])
            if j is None:
                return Energy(absent=f"GPU {g} reported neither its energy counter nor its power "
                                     f"between {t0:.2f} s and {t1:.2f} s", gpus=gpus)
            joules += j
            if integral is not None:
                a, b = before[g].power_w, after[g].power_w
                integral = None if a is None or b is None else integral + (a + b) / 2 * (t1 - t0)
            by_source[source] = by_source.get(source, 0.0) + (t1 - t0)
            if source == INTEGRAL:
                power_kinds.add(f"{after[g].power_source} power")
    seconds = sum(t1 - t0 for t0, _, t1, _ in intervals)
    return Energy(joules=joules, seconds=seconds, gpus=gpus, source=_source(by_source, power_kinds),
                  power_integral_j=integral)


def _source(by_source: dict[str, float], power_kinds: set[str]) -> str:
    integral = f"{INTEGRAL} ({', '.join(sorted(power_kinds))})"
    if INTEGRAL not in by_source:
        return COUNTER
    if COUNTER not in by_source:
        return integral
    share = 100.0 * by_source[COUNTER] / (by_source[COUNTER] + by_source[INTEGRAL])
    return f"{COUNTER} over {share:.0f}% of the time, {integral} over the rest"
