"""Energy over a timed part, from the readings the utilisation sampler took (gpubench/measure/nvml.py).

Per GPU, over the intervals between consecutive readings inside the part: the difference of NVML's total-energy
counter between two readings that have it (the sampler reads it about once a second and at the part's ends, so one
difference spans the intervals between) where it went up; else, interval by interval, the trapezoid of the two power
readings (instantaneous where the GPU reports it). So a counter that starts answering mid-run, or that wraps or
resets between two of its readings, costs only the intervals between those two their counter figure, not the run's;
a GPU without the counter is the power integral throughout. The setup's figure sums the GPUs it used (its ranks);
average watts are that over the part's seconds. No reading of either kind (a CPU run, NVML absent): no figure, and
the reason.
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


def trapezoid_joules(t0: float, a, t1: float, b) -> float | None:
    """The power integral between two readings of one GPU; None when either lacks its power."""
    if a.power_w is None or b.power_w is None:
        return None
    return (a.power_w + b.power_w) / 2 * (t1 - t0)


def over(intervals: list[tuple[float, list, float, list]], gpus: list[int]) -> Energy:
    """Energy over intervals (t0, readings at t0, t1, readings at t1), in time order, summed over the GPU indices
    `gpus`."""
    if not intervals:
        return Energy(absent="no interval of the timed part was sampled")
    joules, integral = 0.0, 0.0
    by_source: dict[str, float] = {}
    power_kinds: set[str] = set()
    for g in gpus:
        found = _one_gpu(intervals, g, by_source, power_kinds)
        if isinstance(found, str):
            return Energy(absent=found, gpus=gpus)
        joules += found
        for t0, before, t1, after in intervals:
            if integral is not None:
                j = trapezoid_joules(t0, before[g], t1, after[g])
                integral = None if j is None else integral + j
    seconds = sum(t1 - t0 for t0, _, t1, _ in intervals)
    return Energy(joules=joules, seconds=seconds, gpus=gpus, source=_source(by_source, power_kinds),
                  power_integral_j=integral)


def _one_gpu(intervals: list[tuple[float, list, float, list]], g: int, by_source: dict[str, float],
             power_kinds: set[str]) -> float | str:
    """GPU g's joules over the intervals (adding each source's seconds to by_source), or why there are none. The
    counter's difference spans the intervals from one reading that has it to the next, within a run of adjoining
    intervals; the intervals no such pair spans are integrated one by one."""
    joules = 0.0
    anchor: tuple[float, int] | None = None  # (t, mJ) of the last reading with the counter, in this run
    loose: list[tuple[float, object, float, object]] = []  # the intervals since the anchor (or the run's start)

    def integrate() -> str | None:
        nonlocal joules
        for t0, a, t1, b in loose:
            j = trapezoid_joules(t0, a, t1, b)
            if j is None:
                return f"GPU {g} reported neither its energy counter nor its power between {t0:.2f} s and {t1:.2f} s"
            joules += j
            by_source[INTEGRAL] = by_source.get(INTEGRAL, 0.0) + (t1 - t0)
            power_kinds.add(f"{b.power_source} power")
        loose.clear()
        return None

    last_t1 = None
    for t0, before, t1, after in intervals:
        a, b = before[g], after[g]
        if t0 != last_t1:  # a new run of adjoining intervals (another timed part): nothing spans the gap
            problem = integrate()
            if problem:
                return problem
            anchor = (t0, a.energy_mj) if a.energy_mj is not None else None
        loose.append((t0, a, t1, b))
        if b.energy_mj is not None:
            if anchor is not None and b.energy_mj >= anchor[1]:
                joules += (b.energy_mj - anchor[1]) / 1000.0
                by_source[COUNTER] = by_source.get(COUNTER, 0.0) + (t1 - anchor[0])
                loose.clear()
            else:  # no reading of the counter before, or it wrapped or reset since: those intervals' power
                problem = integrate()
                if problem:
                    return problem
            anchor = (t1, b.energy_mj)
        last_t1 = t1
    problem = integrate()
    return problem if problem else joules


def _source(by_source: dict[str, float], power_kinds: set[str]) -> str:
    integral = f"{INTEGRAL} ({', '.join(sorted(power_kinds))})"
    if INTEGRAL not in by_source:
        return COUNTER
    if COUNTER not in by_source:
        return integral
    share = 100.0 * by_source[COUNTER] / (by_source[COUNTER] + by_source[INTEGRAL])
    return f"{COUNTER} over {share:.0f}% of the time, {integral} over the rest"
