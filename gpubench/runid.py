"""Run ids: `<workload>-<UTC time>-<random>`, sortable by time and unique across machines."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

_RUN_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}-\d{8}T\d{6}Z-[0-9a-f]{6}$")


def new_run_id(workload: str) -> str:
    return f"{workload}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def is_run_id(value: str) -> bool:
    return bool(_RUN_ID.match(value))
