"""When each request of an open-loop load is due: offsets in seconds from the start, drawn before the load.

The gaps are gamma-distributed with shape `burstiness` and mean 1/rate, as vLLM's `--burstiness` (1: Poisson,
exponential gaps; below 1 burstier; above 1 steadier). The first request is due at once. The drawn gaps are then
scaled so that their mean is exactly 1/rate: a few hundred random gaps miss the asked rate by several percent
(the standard error of their mean is 1/sqrt(n) of it), and that noise would land in every comparison of two
runs and in the achieved-against-requested check; the shape of the distribution is unchanged.
"""

from __future__ import annotations

import random


def schedule(count: int, rate: float, burstiness: float = 1.0, seed: int = 42) -> list[float]:
    """`count` due times (seconds from the start, non-decreasing, the first 0) at `rate` requests/s."""
    rng = random.Random(f"{seed}-arrivals")
    gaps = [rng.gammavariate(burstiness, 1.0 / (rate * burstiness)) for _ in range(count - 1)]
    if gaps and sum(gaps) > 0:
        scale = (len(gaps) / rate) / sum(gaps)
        gaps = [g * scale for g in gaps]
    out, at = [0.0], 0.0
    for gap in gaps:
        at += gap
        out.append(at)
    return out[:count]
