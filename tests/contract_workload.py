"""A workload used only by the contract tests: a session, a skip, an oom, a failure, derived metrics."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from gpubench.workload import MetricDef, SetupSkipped

EVENTS: list[str] = []  # what happened, in order, for the tests to read


@dataclass
class Config:
    fail: str = ""  # a setup that raises
    session_fails: bool = False


SMOKE: dict = {}
METRICS = {"value": MetricDef("units", "higher"), "ready_s": MetricDef("s", "lower"),
           "speedup": MetricDef("x", "higher")}
SETUPS = {"a1": "a", "a2": "a", "b1": "b", "skip": "c", "oom": "c"}


def session_key(setup, config):
    return SETUPS[setup]


@contextlib.contextmanager
def open_session(key, config, ctx):
    EVENTS.append(f"open {key}")
    if config.session_fails:
        raise RuntimeError(f"server {key} did not start")
    ctx.metrics["ready_s"] = 1.5
    ctx.info["server"] = key
    try:
        yield f"server-{key}"
    finally:
        EVENTS.append(f"close {key}")


def run_setup(setup, config, ctx):
    EVENTS.append(f"run {setup} in {ctx.session}")
    if setup == config.fail:
        raise ValueError(f"{setup} broke\nsecond line")
    if setup == "skip":
        raise SetupSkipped("needs 4 GPUs, this host has 0")
    if setup == "oom":
        raise MemoryError("cannot allocate")
    ctx.info["setup"] = setup
    return {"value": {"a1": 10.0, "a2": 30.0, "b1": 20.0}[setup]}


def derive(config, results):
    base = next(r for r in results if r.setup == "a1").metrics["value"].value
    return {r.setup: {"speedup": r.metrics["value"].value / base} for r in results}
