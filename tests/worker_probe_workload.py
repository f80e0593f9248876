"""A workload for the worker's record tests: it reports what its context says, takes the time it is
told, and fails in the ways it is told (tests/test_worker_records.py)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from gpubench.workload import MetricDef, SetupSkipped


@dataclass
class Config:
    sleep_s: float = 0.0  # the first setup's time
    session: str = "s"
    session_fails: bool = False


SMOKE: dict = {}
METRICS = {"value": MetricDef("units", "higher"), "ready_s": MetricDef("s", "lower")}
SETUPS = {"first": 1, "second": 2, "broken": 3, "skip": 4, "oom": 5}


def session_key(setup, config):
    return config.session  # reads the config: a session key from no config would fail


@contextlib.contextmanager
def open_session(key, config, ctx):
    ctx.progress("session", message=f"opening {key}")
    ctx.info["session_for"] = ctx.setup
    if config.session_fails:
        raise RuntimeError(f"session {key} did not open")
    ctx.metrics["ready_s"] = 0.25
    yield f"session-{key}"


def run_setup(setup, config, ctx):
    ctx.progress("timed", done=1, total=3, message=f"{setup} at work")
    ctx.info.update(setup=ctx.setup, run_id=ctx.run_id, repeat=ctx.repeat, smoke=ctx.smoke, weights=ctx.weights,
                    weight_paths=ctx.weight_paths, rank=ctx.rank,
                    world_size=ctx.world_size, session=ctx.session)
    if setup == "first":
        time.sleep(config.sleep_s)
    if setup == "broken":
        raise ValueError("broken setup")
    if setup == "oom":
        raise MemoryError()
    if setup == "skip":
        raise SetupSkipped("x" * 600)
    return {"value": SETUPS[setup]}
