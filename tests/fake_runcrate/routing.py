"""Requests as the handlers see them, and the table from method + path to handler."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from .wire import ApiError, Response


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Header names in lower case."""
    body: bytes
    action_delay_s: float = 0.0
    """A slow route's delay, for handlers that must be slow while holding their Idempotency-Key."""

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def int_arg(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.arg(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ApiError(422, "validation_error", f"{name}: must be an integer", {"field": name}) from None
        if not low <= value <= high:
            raise ApiError(
                422, "validation_error", f"{name}: must be between {low} and {high}", {"field": name}
            )
        return value

    def json(self) -> dict[str, Any]:
        """The JSON object body; an empty body (cancel sends one) reads as {}."""
        if not self.body.strip():
            return {}
        try:
            value = json.loads(self.body)
        except ValueError:
            raise ApiError(400, "invalid_json", "The request body is not valid JSON") from None
        if not isinstance(value, dict):
            raise ApiError(400, "invalid_json", "The request body must be a JSON object")
        return value

    def sleep_in_action(self) -> None:
        delay, self.action_delay_s = self.action_delay_s, 0.0
        if delay > 0:
            time.sleep(delay)


Handler = Callable[..., Response]


@dataclass
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    sleeps_itself: bool = False
    """The handler calls ``Request.sleep_in_action`` itself, at the point the delay matters."""


@dataclass
class Router:
    routes: list[Route] = field(default_factory=list)

    def add(self, method: str, pattern: str, handler: Handler, *, sleeps_itself: bool = False) -> None:
        self.routes.append(Route(method, re.compile(pattern), handler, sleeps_itself))

    def find(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        allowed = False
        for route in self.routes:
            match = route.pattern.fullmatch(path)
            if match is None:
                continue
            if route.method == method:
                return route, {k: unquote(v) for k, v in match.groupdict().items()}
            allowed = True
        if allowed:
            raise ApiError(405, "method_not_allowed", f"{method} is not allowed on {path}")
        raise ApiError(404, "not_found", f"No route for {method} {path}")
