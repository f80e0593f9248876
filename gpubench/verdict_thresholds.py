"""The thresholds a result's verdict is judged by, each with its reason in data/verdict_thresholds.csv. Read at the
root so that the verdicts (results/verdict.py) and the load generator's check of itself (loadgen/metrics.py:
client_saturated) take the same numbers without one importing the other."""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources


@cache
def thresholds() -> dict[str, float]:
    text = resources.files("gpubench").joinpath("data", "verdict_thresholds.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {row["name"]: float(row["value"]) for row in rows}
