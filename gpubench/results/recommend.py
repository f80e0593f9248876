"""Which GPU to rent for a study: its stored runs ranked by cost per unit of the study's headline at each GPU's price.

Per GPU (and config, where runs differ in it): the setup that gives that GPU its lowest cost per unit (with `--slo`,
among the serving load levels whose p99 TTFT and TPOT met the target), its repeats pooled over runs. Cost per unit
is the catalog's cost basis (gpubench/catalog.py) of the headline's median at the GPU's price: current prices when
given (the Runcrate API's /instances/types), else the price its latest run was costed at. The spread is the headline's
min-max over repeats, as cost. Two GPUs tie ("within noise") by compare.py's rule, max(5%, 2 x CV); a GPU with one
repeat has no spread to judge by and is not ranked ("too few runs to rank"). Energy per unit is the metric of that role
the runner adds where the GPU had an energy source; "-" where it has none. The verdict is what bounded that setup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench import pricing
from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.loadgen import slo
from gpubench.registry import UnknownName
from gpubench.results import compare, report, verdict
from gpubench.results.stored_runs import StoredRun
from gpubench.results.summary import fmt
from gpubench.schema import ENERGY_PER_UNIT_ROLE, MetricSummary, summarize


class RecommendError(ValueError):
    """Bad input for recommend; str() is one line."""


@dataclass
class Choice:
    """One GPU's answer: its best setup, what it costs per unit there, and how sure that is."""

    gpu: str
    setup: str
    headline: MetricSummary
    price: float | None
    price_source: str
    cost: float | None = None  # USD per unit at the median
    cost_range: tuple[float, float] | None = None  # at the headline's best and worst repeat
    energy: MetricSummary | None = None
    energy_unit: str = ""
    verdict: str = ""
    standing: str = ""  # "1", "within noise of 1", "2", "too few runs to rank (n=1)", "no price"
    rank: int | None = None


@dataclass
class Answer:
    spec: WorkloadSpec
    metric: str
    unit: str  # the cost unit ("1M output tokens")
    choices: list[Choice]
    prices: str  # where the prices came from, in words
    target: slo.Target | None = None
    smoke: bool = False
    better: str = "higher"  # the headline metric's better direction, as its results carry it
    notes: list[str] = field(default_factory=list)

    @property
    def ranked(self) -> list[Choice]:
        return [c for c in self.choices if c.rank is not None]

    def cheapest(self) -> Choice | None:
        return next(iter(self.ranked), None)

    @property
    def on_cost(self) -> bool:
        """Ranked on cost per unit (the headline is the cost basis), else on the metric itself."""
        return self.spec.cost is not None and self.metric == self.spec.cost.metric

    def fastest(self) -> Choice | None:
        found = [c for c in self.choices if c.headline.n >= 2]
        return (max if self.better == "higher" else min)(found, key=lambda c: c.headline.median, default=None)

    def least_energy(self) -> Choice | None:
        found = [c for c in self.choices if c.energy is not None and c.energy.n >= 2]
        return min(found, key=lambda c: c.energy.median, default=None)


def study(name: str) -> WorkloadSpec:
    try:
        return WORKLOADS.get(name)
    except UnknownName as exc:
        raise RecommendError(str(exc)) from None


def recommend(spec: WorkloadSpec, runs: list[StoredRun], metric: str | None = None,
              target: slo.Target | None = None, current_prices: dict[str, float] | None = None,
              prices_said: str = "") -> Answer:
    """The ranked answer for `spec` from its runs among `runs`. current_prices: {Runcrate GPU type: $/hour}."""
    mine = [run for run in runs if run.workload == spec.name]
    if not mine:
        found = sorted({run.workload for run in runs})
        raise RecommendError(f"no {spec.name} runs there (runs of: {', '.join(found) or 'none'})")
    full = [run for run in mine if not run.started.smoke]
    smoke = not full
    mine = full or mine
    basis = spec.cost
    given = metric
    metric = metric or (basis.metric if basis else None)
    if metric is None:
        raise RecommendError(f"{spec.name} has no cost basis: give --metric")
    reported = sorted({name for run in mine for r in run.results for name in r.metrics})
    if not reported:
        raise RecommendError(f"no result of the {len(mine)} {spec.name} run{'s' * (len(mine) != 1)} has a metric to"
                             " rank on: each failed, or its line was unreadable (named above)")
    if metric not in reported:
        said = f"--metric {metric}" if given else f"{metric} ({spec.name}'s cost basis; give --metric)"
        raise RecommendError(f"{said}: not in the {spec.name} runs; valid: {', '.join(reported)}")
    if target is not None and "ttft_ms_p99" not in reported:
        raise RecommendError(f"--slo: {spec.name} is not a serving study (no ttft_ms_p99 in its runs)")
    better = next((r.metrics[metric].better for run in mine for r in run.results if metric in r.metrics
                   and r.metrics[metric].better), None) or ("lower" if basis and basis.kind == "seconds" else "higher")
    variant = report.config_variants(mine)
    groups: dict[tuple[str, str], list[StoredRun]] = {}
    for run in mine:
        groups.setdefault((run.gpu, variant[id(run)]), []).append(run)
    choices, missed, unmeasured = [], [], []
    for (gpu, config), group in sorted(groups.items()):
        label = f"{gpu} ({config})" if config else gpu
        choice = _best_setup(spec, label, group, metric, better, target, current_prices)
        if choice is not None:
            choices.append(choice)
        elif target is not None and _best_setup(spec, label, group, metric, better, None, current_prices):
            missed.append(label)
        else:
            unmeasured.append(label)
    prices = prices_said or "prices as stored with the runs"
    answer = Answer(spec, metric, basis.unit if basis else "", choices, prices, target, smoke, better)
    _rank(answer)
    if missed:
        answer.notes.append(f"no load level met the latency target on: {', '.join(missed)}")
    if unmeasured:  # every result failed, or was skipped as unreadable: named, never silently left out
        answer.notes.append(f"not ranked, no ok result with {metric}: {', '.join(unmeasured)}")
    if smoke:
        answer.notes.append(f"only --smoke runs of {spec.name}: they test the code path at a tiny size;"
                            " not a benchmark")
    return answer


def _best_setup(spec: WorkloadSpec, label: str, runs: list[StoredRun], metric: str, better: str,
                target: slo.Target | None, current_prices: dict[str, float] | None) -> Choice | None:
    """This GPU's setup with the lowest cost per unit (or best metric, unpriced), its repeats pooled over runs."""
    from gpubench import pricing

    results = [(run, r) for run in runs for r in run.results if r.status == "ok"]
    gpu = runs[0].gpu
    price, source = None, "none"
    if current_prices:
        name = pricing.best_match(current_prices, [gpu])
        if name is not None:
            price, source = current_prices[name], f"Runcrate {name} now"
    if price is None:
        stored = [run for run in sorted(runs, key=lambda r: r.started.ts) if run.price_usd_per_hour]
        if stored:
            price, source = stored[-1].price_usd_per_hour, "stored with its latest run"
    candidates = []
    for setup in dict.fromkeys(r.setup for _, r in results):
        rows = [r for _, r in results if r.setup == setup]
        values = [r.metrics[metric].value for r in rows if metric in r.metrics]
        if not values:
            continue
        if target is not None and not _meets(rows, target):
            continue
        headline = summarize(next(r.metrics[metric].unit for r in rows if metric in r.metrics), values)
        choice = Choice(gpu=label, setup=setup, headline=headline, price=price, price_source=source,
                        verdict=verdict.per_setup(rows).get(setup, ""))
        _cost(spec, choice, metric)
        energy = [(name, m) for r in rows for name, m in r.metrics.items() if m.role == ENERGY_PER_UNIT_ROLE]
        if energy:
            choice.energy = summarize(energy[0][1].unit, [m.value for name, m in energy if name == energy[0][0]])
            choice.energy_unit = energy[0][1].unit
        candidates.append(choice)
    if not candidates:
        return None
    if all(c.cost is not None for c in candidates):
        return min(candidates, key=lambda c: c.cost)
    return (max if better == "higher" else min)(candidates, key=lambda c: c.headline.median)


def _meets(rows, target: slo.Target) -> bool:
    """A load level's pooled p99s (medians over repeats) within the target."""
    pooled = {}
    for name in ("ttft_ms_p99", "tpot_ms_p99"):
        values = sorted(r.metrics[name].value for r in rows if name in r.metrics)
        if values:
            pooled[name] = summarize("ms", values).median
    return bool(slo.level_meets(pooled, target))


def _cost(spec: WorkloadSpec, choice: Choice, metric: str) -> None:
    basis = spec.cost
    if basis is None or metric != basis.metric or choice.price is None:
        return
    h = choice.headline
    choice.cost = pricing.usd_per_unit(basis, h.median, choice.price)
    ends = [pricing.usd_per_unit(basis, v, choice.price) for v in (h.min, h.max)]
    if None not in ends:
        choice.cost_range = (min(ends), max(ends))


def _rank(answer: Answer) -> None:
    """Cheapest first among GPUs with a spread (n >= 2); a GPU within noise of the first of a rank shares its rank."""
    judged = [c for c in answer.choices if c.headline.n >= 2]
    for c in answer.choices:
        if c.headline.n < 2:
            c.standing = f"too few runs to rank (n={c.headline.n})"
    on_cost = answer.on_cost and any(c.cost is not None for c in judged)
    if on_cost:
        for c in judged:
            if c.cost is None:
                c.standing = "no price: not ranked"
        order = sorted((c for c in judged if c.cost is not None), key=lambda c: c.cost)
        better = "lower"
    else:
        better = answer.better
        order = sorted(judged, key=lambda c: c.headline.median, reverse=better == "higher")
    leader = None
    for i, c in enumerate(order):
        if leader is not None:
            a, b = (leader.cost, c.cost) if on_cost else (leader.headline.median, c.headline.median)
            if compare.verdict(a, b, compare.noise(leader.headline, c.headline), better) == "within noise":
                c.rank = leader.rank
                c.standing = f"{c.rank} (within noise of {leader.gpu})"
                continue
        c.rank, leader = i + 1, c
        c.standing = str(c.rank)
    answer.choices.sort(key=lambda c: (c.rank is None, c.rank or 0, c.cost or 0))


def table(answer: Answer) -> tuple[list[str], list[list[str]]]:
    unit = f"USD/{answer.unit}" if answer.unit else "USD"
    energy_unit = next((c.energy_unit for c in answer.choices if c.energy_unit), "J/unit")
    header = ["rank", "GPU", "setup", "$/hour", f"cost ({unit})", "cost spread", f"{answer.metric}"
              f" ({answer.choices[0].headline.unit if answer.choices else ''})", "n", f"energy ({energy_unit})",
              "bounded by"]
    rows = []
    for c in answer.choices:
        spread = f"{fmt(c.cost_range[0])}-{fmt(c.cost_range[1])}" if c.cost_range and c.headline.n > 1 else ""
        h = c.headline
        value = fmt(h.median) + (f" ±{h.cv * 100:.0f}%" if h.n > 1 and h.cv is not None else "")
        rows.append([c.standing, c.gpu, c.setup, f"{c.price:g} ({c.price_source})" if c.price else "-",
                     fmt(c.cost) if c.cost is not None else "-", spread, value, str(h.n),
                     fmt(c.energy.median) if c.energy else "–", c.verdict or "-"])
    return header, rows


def headline(answer: Answer) -> str:
    """One line, each GPU named with the figure it is named for: cheapest per unit; fastest; least energy."""
    def name(c: Choice | None, what: str, figure: str = "") -> str:
        return f"{what}: {c.gpu} ({c.setup})" + (f" at {figure}" if figure else "") if c else f"{what}: -"

    def rate(c: Choice | None) -> str:
        return f"{fmt(c.headline.median)} {c.headline.unit}".rstrip() if c else ""

    cheapest = answer.cheapest()
    tied = [c.gpu for c in answer.ranked if cheapest and c.rank == cheapest.rank and c is not cheapest]
    costed = cheapest is None or cheapest.cost is not None
    on_cost = answer.on_cost and costed
    first = name(cheapest, "cheapest per unit" if on_cost else
                 f"best {answer.metric}" + ("" if costed or not answer.on_cost else " (no price to cost it)"),
                 f"${fmt(cheapest.cost)} per {answer.unit}" if on_cost and cheapest else rate(cheapest))
    if tied:
        first += f", within noise of {', '.join(tied)}"
    if cheapest is None and answer.choices:
        few = sum(c.headline.n < 2 for c in answer.choices)
        every = "its one GPU series has" if few == 1 else f"each of the {few} GPU series has"
        why = (f"{every} one repeat: no spread to rank by" if few == len(answer.choices)
               else f"{few} of {len(answer.choices)} GPU series have one repeat, the rest no price")
        first = f"{first.split(':')[0]}: none ranked ({why})"
    least = answer.least_energy()
    energy = f"{fmt(least.energy.median)} {least.energy_unit}" if least else ""
    line = "; ".join([first, name(answer.fastest(), "fastest", rate(answer.fastest())),
                      name(least, "least energy", energy)])
    return f"--smoke runs only, not a benchmark: {line}" if answer.smoke else line


def decide(spec: WorkloadSpec, runs: list[StoredRun]) -> str:
    """The one line for a study's stored runs at their stored prices (site and report show it); "" where there is
    nothing to rank (no cost basis and no --metric, no runs of it)."""
    try:
        return headline(recommend(spec, runs))
    except RecommendError:
        return ""


def markdown(answer: Answer) -> str:
    header, rows = table(answer)
    lines = [f"## {answer.spec.name}: which GPU, by cost per {answer.unit or answer.metric}", ""]
    lines.append(f"- {headline(answer)}")
    lines.append(f"- prices: {answer.prices}")
    if answer.target is not None:
        lines.append(f"- latency target: {answer.target.describe()}: only the load levels that met it count")
    lines.append(f"- ties: within max({compare.NOISE_FLOOR:.0%}, 2 x CV) of the first GPU of a rank (gpubench compare's"
                 " rule); a GPU with one repeat has no spread: not ranked")
    lines += [f"- {note}" for note in answer.notes]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines) + "\n"
