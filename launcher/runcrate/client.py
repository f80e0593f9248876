"""The Runcrate SDK client, built from the environment, and one-line descriptions of its errors.

RUNCRATE_API_KEY holds the key (never passed to a job, never printed); RUNCRATE_BASE_URL the API
origin (default: the SDK's own); RUNCRATE_ENVIRONMENT an optional Runcrate environment.
"""

from __future__ import annotations

import os
import re

from ..errors import LaunchError
from ..redact import Redactor
from .budget import process_budget

# What a key looks like: the SDK insists on the prefix; anything else here (spaces, a newline)
# would end up in an HTTP header error message, so it is refused first.
_KEY = re.compile(r"rc_live_[A-Za-z0-9._~+/=-]+")


def api_key() -> str:
    key = os.environ.get("RUNCRATE_API_KEY", "")
    if not key:
        raise LaunchError("RUNCRATE_API_KEY is not set: create an API key in the Runcrate console and export it")
    if not _KEY.fullmatch(key):
        raise LaunchError("RUNCRATE_API_KEY is malformed: a Runcrate API key starts with rc_live_ and has no spaces")
    return key


def base_url() -> str:
    from runcrate._config import _DEFAULT_BASE_URL

    return (os.environ.get("RUNCRATE_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")


def make_client(*, max_retries: int | None = None):
    """An AsyncRuncrate for the configured origin. max_retries=0 leaves every retry to the caller."""
    from runcrate import AsyncRuncrate

    key = api_key()
    try:
        client = AsyncRuncrate(
            api_key=key, base_url=base_url(), max_retries=max_retries,
            environment=os.environ.get("RUNCRATE_ENVIRONMENT") or None,
        )
    except ValueError as exc:  # the SDK's own key check
        raise LaunchError(f"RUNCRATE_API_KEY is malformed: {exc}") from None
    process_budget().attach(client)  # every client of this process shares one request budget
    return client


def api_errors() -> tuple[type[BaseException], ...]:
    """What an SDK call raises when the API says no or cannot be reached."""
    from pydantic import ValidationError
    from runcrate import RuncrateError

    return (RuncrateError, ValidationError)


def describe(exc: BaseException, redact: Redactor | None = None) -> str:
    """One line about an SDK error, without secrets."""
    from pydantic import ValidationError
    from runcrate import ApiError, ConnectionError, TimeoutError

    if isinstance(exc, ApiError):
        text = f"HTTP {exc.status_code} {exc.code}: {exc.message}"
    elif isinstance(exc, TimeoutError):
        text = f"the Runcrate API at {base_url()} did not answer in time"
    elif isinstance(exc, ConnectionError):
        text = f"cannot reach the Runcrate API at {base_url()} ({_short(str(exc))})"
    elif isinstance(exc, ValidationError):
        text = f"unexpected answer from the Runcrate API ({exc.error_count()} field errors)"
    else:
        text = f"{type(exc).__name__}: {_short(str(exc))}"
    text = " ".join(text.split())
    return (redact or Redactor())(text)


def _short(text: str) -> str:
    text = text.removeprefix("Connection failed: ").removeprefix("Request timed out: ")
    return text.splitlines()[0][:200] if text else "no detail"


def status_code(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)
