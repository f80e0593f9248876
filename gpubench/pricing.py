"""The hourly price a run is costed at (given, or picked by the GPU obtained from the launcher's candidates), and
the cost metrics that price makes of a result: the one place they are computed and named.

A launcher that offers several GPU types (a fallback list) cannot know the price before the job starts,
so it passes `GPUBENCH_PRICES_USD_PER_HOUR="RTX5090=0.69,A100-80GB=1.73"` and the run picks the entry
whose name matches the GPU it sees. No match, or two equally good ones, means no price: a cost computed
at the wrong price is worse than none.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpubench.params import PRICE
from gpubench.schema import COST_ROLE, VALUE_ROLE, Metric
from gpubench.workload import MetricDef

if TYPE_CHECKING:
    from gpubench.catalog import CostBasis

COST_PREFIX = "usd_per_"  # dollars per unit of output: lower is better
VALUE_SUFFIX = "_per_usd"  # units of output per dollar: higher is better


class PriceError(ValueError):
    """A malformed price variable; str() is one line."""


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]


def _matches(candidate: str, gpu_name: str) -> bool:
    """Each of the candidate's tokens is a run of whole tokens of the GPU's name: RTX5090 fits "GeForce RTX 5090",
    A10 does not fit "A100 80GB PCIe"."""
    words = _tokens(gpu_name)
    runs = {"".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    return all(token in runs for token in _tokens(candidate))


def parse_prices(text: str) -> dict[str, float]:
    prices = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        name, sep, value = entry.partition("=")
        if not sep or not name.strip():
            raise PriceError(f"GPUBENCH_PRICES_USD_PER_HOUR entry {entry!r}: use NAME=USD_PER_HOUR")
        problem = PRICE.problem(value)
        if problem:
            raise PriceError(f"GPUBENCH_PRICES_USD_PER_HOUR entry {entry!r}: the price {problem}")
        prices[name.strip()] = float(value)
    return prices


def best_match(names, gpu_names: list[str]) -> str | None:
    """The name (a GPU class like "A100-80GB") that fits every GPU seen, the most specific winning; None if tied."""
    if not gpu_names:
        return None
    found = [(len(_tokens(name)), name) for name in names if all(_matches(name, gpu) for gpu in gpu_names)]
    if not found:
        return None
    found.sort(reverse=True)
    if len(found) > 1 and found[0][0] == found[1][0]:
        return None
    return found[0][1]


def price_for(prices: dict[str, float], gpu_names: list[str]) -> tuple[str, float] | None:
    """(candidate, price) for the GPU this machine has, the most specific name winning (A100-80GB over A100)."""
    name = best_match(prices, gpu_names)
    return None if name is None else (name, prices[name])


def cost_metric_names(basis: CostBasis) -> tuple[str, str]:
    """(usd_per_<unit>, <unit>_per_usd) for a cost basis: "1M tokens" -> usd_per_1M_tokens, 1M_tokens_per_usd."""
    slug = basis.unit.replace(" ", "_")
    return f"{COST_PREFIX}{slug}", f"{slug}{VALUE_SUFFIX}"


def cost_definitions(basis: CostBasis | None) -> dict[str, MetricDef]:
    """The two metrics a cost basis makes, declared: dollars per unit (role cost) and units per dollar (value)."""
    if basis is None:
        return {}
    cost, value = cost_metric_names(basis)
    return {cost: MetricDef(f"USD/{basis.unit}", "lower", f"dollars per {basis.unit} at the run's hourly price",
                            role=COST_ROLE),
            value: MetricDef(f"{basis.unit}/USD", "higher", f"{basis.unit} per dollar at the run's hourly price",
                             role=VALUE_ROLE)}


def usd_per_unit(basis: CostBasis, value: float, usd_per_hour: float | None) -> float | None:
    """Dollars per priced unit of output at an hourly price; None without a price or without output."""
    return basis.usd_per_unit(value, usd_per_hour) if usd_per_hour else None


def cost_metrics(basis: CostBasis | None, metrics: dict[str, Metric], usd_per_hour: float | None,
                 declared: dict[str, MetricDef] | None = None) -> dict[str, Metric]:
    """Every cost a result has at the run's hourly price, the one function that makes them (the runner, for
    `gpubench loadgen` too, and `report` for a run stored without costs; never a workload): $ per unit of output and
    units per $ of the cost basis' metric, and each metric `declared` as a cost of another (MetricDef.cost_of: embed's
    tuned rate)."""
    if basis is None:
        return {}
    out: dict[str, Metric] = {}
    usd = usd_per_unit(basis, metrics[basis.metric].value, usd_per_hour) if basis.metric in metrics else None
    if usd:
        (cost, cost_def), (value, value_def) = cost_definitions(basis).items()
        out.update({cost: cost_def.metric(usd), value: value_def.metric(1.0 / usd)})
    for name, definition in (declared or {}).items():
        priced = definition.cost_of
        usd = usd_per_unit(basis, metrics[priced].value, usd_per_hour) if priced in metrics else None
        if usd:
            out[name] = definition.metric(usd)
    return out
