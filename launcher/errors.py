"""The launcher's user-facing failures; its exit codes are gpubench's (gpubench/exit_codes.py).

Several runs: 130 if any was interrupted, otherwise the highest code.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from gpubench.exit_codes import (  # noqa: F401  (re-exported: the launcher's modules use errors.X)
    BAD_INPUT,
    INTERRUPTED,
    JOB_NOT_SUCCEEDED,
    KEPT_LOCALLY,
    LIMIT_REACHED,
    OK,
    SETUPS_NOT_OK,
)

LAUNCHER_TROUBLE = KEPT_LOCALLY


class Table(BaseModel):
    """A plan's table as written, read by read_table: no key it does not declare, no value of another type.
    REFUSED holds the one-line message for a key whose value is refused ("": the table itself)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    REFUSED: ClassVar[dict[str, str]] = {}


T = TypeVar("T", bound=Table)


class LaunchError(Exception):
    """A failure before anything was launched; str() is one line, shown as `gpubench-launch: error: ...`."""

    def __init__(self, message: str, exit_code: int = BAD_INPUT):
        super().__init__(" ".join(str(message).split()))
        self.exit_code = exit_code


def combine(codes: list[int]) -> int:
    """One exit code for several runs."""
    if INTERRUPTED in codes:
        return INTERRUPTED
    return max(codes, default=OK)


def read_table(model: type[T], table: Any, where: str, within: str = "") -> T:
    """A plan's table as its pydantic model (extra keys forbidden), or one line: the first key it should not have with
    the keys it may have, else the model's `REFUSED` line for the first key whose value it refuses ("" is the
    table itself: not a table)."""
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        errors = exc.errors()
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        inside = f" in {within}" if within else ""
        keys = ", ".join(sorted(model.model_fields))
        raise LaunchError(f"{where}: unknown key {unknown[0]!r}{inside} (keys: {keys})")
    key = errors[0]["loc"][0] if errors[0]["loc"] else ""
    if key not in model.REFUSED:
        raise LaunchError(f"{where}: {key}: {errors[0]['msg']}")
    raise LaunchError(f"{where}: " + model.REFUSED[key].format(value=table.get(key) if key else table))
