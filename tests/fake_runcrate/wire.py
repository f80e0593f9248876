"""The API's wire conventions: ISO timestamps with Z, the data/error envelopes, HTTP answers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 with millisecond precision and a ``Z``, as the real API writes timestamps."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return Response(status, body, {"Content-Type": "application/json", **(headers or {})})


def ok(data: Any, *, status: int = 200, meta: dict[str, Any] | None = None) -> Response:
    """A success: always an object with ``data`` (a bare array would crash the SDK)."""
    payload: dict[str, Any] = {"data": data}
    if meta is not None:
        payload["meta"] = meta
    return json_response(status, payload)


def no_content() -> Response:
    return Response(204)


class ApiError(Exception):
    """An error answer: ``{"error": {"code", "message", "details"?}}`` with its HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}

    def response(self) -> Response:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return json_response(self.status, {"error": error}, self.headers)


def not_found(kind: str, ident: str) -> ApiError:
    return ApiError(404, "not_found", f"{kind} {ident!r} not found")


def conflict(message: str, **details: Any) -> ApiError:
    return ApiError(409, "conflict", message, details or None)


def invalid(field_name: str, message: str) -> ApiError:
    return ApiError(422, "validation_error", f"{field_name}: {message}", {"field": field_name})


DEFAULT_ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    402: "insufficient_credits",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}
