"""Field checks that answer 422 ``validation_error`` the way the API does for bad or out-of-range fields."""

from __future__ import annotations

from typing import Any

from .wire import invalid

_ABSENT = object()


def required(body: dict[str, Any], name: str) -> Any:
    if body.get(name) is None:
        raise invalid(name, "is required")
    return body[name]


def integer(body: dict[str, Any], name: str, low: int, high: int, default: Any = _ABSENT) -> Any:
    """An int in [low, high]; ``default`` (which may be None) when absent or null."""
    value = body.get(name)
    if value is None:
        if default is _ABSENT:
            raise invalid(name, "is required")
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(name, "must be an integer")
    if not low <= value <= high:
        raise invalid(name, f"must be between {low} and {high}")
    return value


def text(body: dict[str, Any], name: str, *, max_bytes: int | None = None, default: Any = None) -> Any:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise invalid(name, "must be a string")
    if max_bytes is not None and len(value.encode()) > max_bytes:
        raise invalid(name, f"must be at most {max_bytes} bytes")
    return value


def flag(body: dict[str, Any], name: str, default: bool = False) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(name, "must be a boolean")
    return value


def string_map(body: dict[str, Any], name: str) -> dict[str, str]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise invalid(name, "must be an object of string values")
    return dict(value)


def choices(body: dict[str, Any], name: str, allowed: set[str]) -> list[str]:
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v in allowed for v in value):
        raise invalid(name, f"must be a list of {sorted(allowed)}")
    return list(value)


def integers(body: dict[str, Any], name: str) -> list[int]:
    value = body.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise invalid(name, "must be a list of integers")
    return list(value)


def mapping(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid(name, "must be an object")
    return value
