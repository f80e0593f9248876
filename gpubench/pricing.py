"""The hourly price a run is costed at: given, or picked by the GPU obtained from the launcher's candidates.

A launcher that offers several GPU types (a fallback list) cannot know the price before the job starts,
so it passes `GPUBENCH_PRICES_USD_PER_HOUR="RTX5090=0.69,A100-80GB=1.73"` and the run picks the entry
whose name matches the GPU it sees. No match, or two equally good ones, means no price: a cost computed
at the wrong price is worse than none.
"""

from __future__ import annotations

import re


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
        try:
            prices[name.strip()] = float(value)
        except ValueError:
            raise PriceError(f"GPUBENCH_PRICES_USD_PER_HOUR entry {entry!r}: use NAME=USD_PER_HOUR") from None
        if not sep or not name.strip():
            raise PriceError(f"GPUBENCH_PRICES_USD_PER_HOUR entry {entry!r}: use NAME=USD_PER_HOUR")
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
