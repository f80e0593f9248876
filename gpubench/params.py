"""Numbers and paths as `gpubench` and `gpubench-launch` take them, one type each, so every option refuses the same
bad value the same way: one line naming the option, before anything runs, is written or is paid for.

A number must be finite: NaN passes every `<`/`>` check (so `--price nan` was silently no price) and JSON has
neither NaN nor infinity (so `--price inf` showed as inf and was stored as null).
"""

from __future__ import annotations

import math

import click

from gpubench import exit_codes


class BadValue(click.ClickException):
    """An option's value refused; str() is the whole line (`--price must be ... (got nan)`)."""

    exit_code = exit_codes.BAD_INPUT


def number_problem(value: object, what: str, minimum: float | None = None, min_open: bool = False,
                   maximum: float | None = None, whole: bool = False) -> str | None:
    """Why `value` is not `what` (a finite number in range; a whole one if asked); None when it is."""
    if isinstance(value, bool):
        return f"must be {what}"
    try:
        number = float(value) if not whole else int(str(value).strip())
    except (TypeError, ValueError):
        return f"must be {what}"
    if not math.isfinite(number):
        return f"must be {what}, a finite number"
    if minimum is not None and (number < minimum or (min_open and number == minimum)):
        return f"must be {what}"
    if maximum is not None and number > maximum:
        return f"must be {what}"
    return None


class Number(click.ParamType):
    """A finite number in a range; `what` says it in words ("a positive hourly price in USD")."""

    name = "number"

    def __init__(self, what: str, minimum: float | None = None, min_open: bool = False,
                 maximum: float | None = None, whole: bool = False):
        self.what, self.minimum, self.min_open, self.maximum, self.whole = what, minimum, min_open, maximum, whole
        self.name = "integer" if whole else "number"

    def convert(self, value, param, ctx):
        if isinstance(value, int | float) and not isinstance(value, bool) and self.problem(value) is None:
            return int(value) if self.whole else float(value)
        problem = self.problem(value)
        if problem:
            option = param.opts[0] if param is not None and param.opts else "the value"
            raise BadValue(f"{option} {problem} (got {value})")
        return int(str(value).strip()) if self.whole else float(value)

    def problem(self, value) -> str | None:
        return number_problem(value, self.what, self.minimum, self.min_open, self.maximum, self.whole)


POSITIVE_USD = Number("a positive amount in USD", minimum=0, min_open=True)
POSITIVE_MINUTES = Number("a positive number of minutes", minimum=0, min_open=True)
PRICE = Number("a positive hourly price in USD", minimum=0, min_open=True)
NOISE = Number("a fraction of 0 or more (0.05 is 5%)", minimum=0)


def folder_name(ctx, param, value: str | None):
    """A folder a command writes into, given by name: an empty name (Path("") is ".") is refused, not taken as the
    current folder."""
    from pathlib import Path

    if value is None:
        return None
    if not value.strip():
        raise BadValue(f"{param.opts[0]}: give a folder name (an empty one would be the current folder)")
    return Path(value)
