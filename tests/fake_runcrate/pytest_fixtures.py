"""Fixtures and helpers for tests that drive the real SDK against the fake.

Import the fixtures into a test module: ``from fake_runcrate.pytest_fixtures import client, fake  # noqa: F401``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from runcrate import Runcrate

from .fake import FakeRuncrate

T = TypeVar("T")

# Fast enough for a test suite: an API minute is 50 ms, a follow read is held 2 s at most.
FAST = {
    "minute_s": 0.05,
    "follow_hold_s": 2.0,
    "queue_s": 0.05,
    "start_s": 0.05,
    "container_ready_s": 0.2,
    "vm_ready_s": 0.4,
}


@pytest.fixture
def fake() -> Iterator[FakeRuncrate]:
    with FakeRuncrate(**FAST) as running:
        yield running


@pytest.fixture
def client(fake: FakeRuncrate) -> Iterator[Runcrate]:
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        yield sdk


def wait_until(probe: Callable[[], T], timeout_s: float = 10.0, interval_s: float = 0.02) -> T:
    """Polls ``probe`` until it answers something truthy, and answers that."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value!r} after {timeout_s} s")
        time.sleep(interval_s)


def running(pid: int) -> bool:
    """The process is running (a killed orphan may linger as a zombie until init reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
