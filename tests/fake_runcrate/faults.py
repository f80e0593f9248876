"""Programmable failures: "the next N requests to X answer Y"."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from .wire import DEFAULT_ERROR_CODES, ApiError


@dataclass
class Fault:
    method: str
    path_pattern: re.Pattern[str]
    status: int | None
    """None: no error answer, only the delay (a slow route) and/or the drop."""
    times_left: int | None
    """None: until cleared."""
    code: str | None
    message: str | None
    details: dict[str, Any] | None
    headers: dict[str, str] | None
    delay_s: float
    after_action: bool
    drop: bool

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and self.path_pattern.fullmatch(path) is not None

    @property
    def acts_first(self) -> bool:
        """Whether the real action happens before the fault's answer (or instead of one)."""
        return self.after_action or self.status is None

    def error(self) -> ApiError:
        assert self.status is not None
        code = self.code or DEFAULT_ERROR_CODES.get(self.status, "api_error")
        message = self.message or f"injected HTTP {self.status}"
        return ApiError(self.status, code, message, self.details, self.headers)


class FaultPlan:
    """The injected faults, consumed in the order they were added."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(
        self,
        method: str,
        path_pattern: str,
        status: int | None,
        *,
        times: int | None = 1,
        code: str | None = None,
        message: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        after_action: bool = False,
        drop: bool = False,
    ) -> Fault:
        fault = Fault(
            method=method.upper(),
            path_pattern=re.compile(path_pattern),
            status=status,
            times_left=times,
            code=code,
            message=message,
            details=details,
            headers=headers,
            delay_s=delay_s,
            after_action=after_action,
            drop=drop,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """The first live fault for this request, with one use spent."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    if fault.times_left is not None:
                        fault.times_left -= 1
                        if fault.times_left <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
