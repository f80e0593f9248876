"""`gpubench recommend`: the command's input checks, its prices and its output (the ranking is results/recommend.py)."""

from __future__ import annotations

import os

import click

from gpubench.cli.common import CliError, say_skipped


def run(study: str, sources: list[str], metric: str | None, target_text: str | None) -> None:
    from gpubench.loadgen import slo
    from gpubench.results import recommend, stored_runs
    from gpubench.stores import StoreError

    try:  # everything that can be checked before reading a run
        spec = recommend.study(study)
        target = slo.parse(target_text) if target_text is not None else None  # '' is refused, not no target
    except (recommend.RecommendError, slo.TargetError) as exc:
        raise CliError(str(exc)) from None
    if any(not source.strip() for source in sources):
        raise CliError("an empty SOURCE: give run folders, a results folder or s3://bucket/prefix")
    try:
        runs = stored_runs.discover(sources)
    except (stored_runs.StoredRunError, StoreError, ValueError) as exc:
        raise CliError(str(exc)) from None
    say_skipped(runs)
    prices, said = None, "as stored with the runs (set RUNCRATE_API_KEY for current Runcrate prices)"
    if os.environ.get("RUNCRATE_API_KEY"):
        try:
            prices = current_prices()
            said = "current Runcrate prices (GET /instances/types, cheapest 1-GPU rate per type); stored where a" \
                   " GPU has none there"
        except Exception as exc:  # noqa: BLE001 - no SDK, a bad key, no network: the stored prices still answer
            said = f"as stored with the runs (current Runcrate prices unavailable: {str(exc).splitlines()[0]})"
    try:
        answer = recommend.recommend(spec, runs, metric=metric, target=target, current_prices=prices,
                                     prices_said=said)
    except recommend.RecommendError as exc:
        raise CliError(str(exc)) from None
    click.echo(recommend.markdown(answer))


def current_prices() -> dict[str, float]:
    """Each Runcrate GPU type's cheapest 1-GPU hourly rate now (GET /instances/types); needs RUNCRATE_API_KEY."""
    from gpubench.launcher.runcrate.types import instance_types

    prices: dict[str, float] = {}
    for row in instance_types():
        if row.gpu_count == 1 and row.hourly_rate:
            prices[row.gpu_type] = min(prices.get(row.gpu_type, row.hourly_rate), row.hourly_rate)
    return prices
