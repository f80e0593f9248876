"""The workload interface: what a workload module under workloads/ provides.

A workload module defines, at module level (and imports its heavy libraries inside functions):

    @dataclass
    class Config:            # field defaults are the study's own setup, each declared (config_fields.param):
        batch: int = param(4, "sequences per step", min=1)   # meaning, type, range or choices
        def __post_init__(self): ...   # optional: rules across fields, raising ConfigError
    SMOKE: dict              # overrides that make a CPU-sized run of the same code path, in seconds
    METRICS: dict[str, MetricDef]   # every metric it may report, with unit and direction
    def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]

`run_setup` runs one setup once, in a fresh process of its own (the runner's worker), and returns
metric values by name. Running out of memory is reported by raising (the worker classifies the
exception as `oom`); `SetupSkipped` makes a `skipped` row with its reason; anything else raised is an
`error` result. Facts that are not numbers (a data set's revision, a topology) go in `ctx.info`.

Optional, each changing how setups are run, for every workload alike:
- `weights_for(setup, config) -> list[repo]` narrows the catalog's weights to what one setup loads;
  `ctx.weight_paths` maps each to a local folder (None with --weights random).
- `processes(setup, config) -> int`: the setup runs as N processes with torchrun's rendezvous
  variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); each calls
  `run_setup`, rank 0's return value is the setup's one result (`ctx.rank`, `ctx.world_size`).
- `session_key(setup, config) -> str` and `open_session(key, config, ctx)`, a context manager:
  adjacent setups with the same key run in one process inside one session (one server started for
  several load levels); `run_setup` finds it in `ctx.session`. What `open_session` puts in its
  ctx's `metrics` and `info` is reported once, with the group's first setup.
- `derive(config, results) -> {setup: {metric: value}}`: metrics across setups (a speed-up against
  the baseline setup, a break-even count), computed in the parent after each repeat from that
  repeat's ok results and recorded as `derived` records. It must not import heavy libraries.
The catalog entry (catalog.py) holds the metadata the launcher sees: setups, image, dependencies,
expected duration, cost basis.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpubench import config_fields
from gpubench.catalog import WorkloadSpec
from gpubench.config_fields import ConfigError  # noqa: F401  (re-exported: workloads raise it)


@dataclass(frozen=True)
class MetricDef:
    unit: str
    better: Literal["higher", "lower"] | None = None
    help: str = ""  # what the number is, for `gpubench show`


@dataclass
class SetupContext:
    """What a setup sees of the runner: its identity and a way to report progress."""

    run_id: str
    setup: str
    repeat: int
    smoke: bool
    weights: Literal["auto", "random"]
    progress: Callable[..., None]  # progress(phase, done=None, total=None, message=None)
    weight_paths: dict[str, str | None] = dataclasses.field(default_factory=dict)  # repo -> folder; None: random
    price_usd_per_hour: float | None = None
    rank: int = 0
    world_size: int = 1
    session: Any = None  # what the workload's open_session yielded, for setups that share one
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)  # extra values for this result
    info: dict[str, Any] = dataclasses.field(default_factory=dict)  # non-numeric facts for this result


class SetupSkipped(Exception):
    """A setup that cannot run here for a stated reason (no hub, too few GPUs); never a made-up number."""


class NotImplementedWorkload(ValueError):
    def __init__(self, spec: WorkloadSpec):
        super().__init__(f"workload {spec.name!r} is in the catalog but its code is not written yet")


def load_module(spec: WorkloadSpec) -> types.ModuleType:
    if spec.module is None:
        raise NotImplementedWorkload(spec)
    module = importlib.import_module(spec.module)
    for name in ("Config", "SMOKE", "METRICS", "run_setup"):
        if not hasattr(module, name):
            raise TypeError(f"{spec.module} does not define {name}")
    return module


def processes(module: types.ModuleType, setup: str, config: Any) -> int:
    return int(module.processes(setup, config)) if hasattr(module, "processes") else 1


def groups(module: types.ModuleType, setups: list[str], config: Any) -> list[list[str]]:
    """The setups in run order, adjacent ones that share a session key together; one worker per group."""
    if not hasattr(module, "session_key"):
        return [[setup] for setup in setups]
    out: list[list[str]] = []
    last = object()
    for setup in setups:
        key = module.session_key(setup, config)
        if out and key == last:
            out[-1].append(setup)
        else:
            out.append([setup])
        last = key
    return out


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--set {pair!r}: use --set name=value")
        overrides[name.strip()] = value.strip()
    return overrides


def build_config(module: types.ModuleType, smoke: bool, overrides: dict[str, str]) -> Any:
    """The study's defaults, then the smoke size if asked, then the user's --set overrides, each field checked
    against its declaration (gpubench/config_fields.py)."""
    values: dict[str, Any] = dict(module.SMOKE) if smoke else {}
    for name, raw in overrides.items():
        values[name] = config_fields.parse(module.Config, name, raw)
    config = module.Config(**values)  # its __post_init__ checks rules across fields (ConfigError)
    config_fields.check(config)
    return config
