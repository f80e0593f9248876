"""Prometheus text exposition: the samples of a /metrics page, summed over their label sets. Read by the servers'
counters (servers/vllm.py) and the load generator's gauge sampler (loadgen/server_gauges.py), so it sits below both.
"""

from __future__ import annotations

import math


def parse(text: str) -> dict[str, float]:
    """{metric name: sum over every label set}; comments and unparsable lines are skipped."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name = line[:line.index("{")]
            rest = line[line.rindex("}") + 1:].split()
        else:
            name, *rest = line.split()
        try:
            value = float(rest[0])
        except (IndexError, ValueError):
            continue
        if math.isfinite(value):
            totals[name] = totals.get(name, 0.0) + value
    return totals


def counter(samples: dict[str, float], name: str) -> float | None:
    """A counter by its name with or without the `_total` suffix clients add to counters."""
    for candidate in (f"{name}_total", name):
        if candidate in samples:
            return samples[candidate]
    return None
