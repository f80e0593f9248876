"""The workload interface: what a workload module under workloads/ provides.

A workload module defines, at module level (and imports its heavy libraries inside functions):

    @dataclass
    class Config:            # field defaults are the study's own setup
        ...
    SMOKE: dict              # overrides that make a CPU-sized run of the same code path, in seconds
    METRICS: dict[str, MetricDef]   # every metric it may report, with unit and direction
    def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]

An optional `weights_for(setup, config) -> list[repo]` narrows the catalog's weights to what one
setup loads; `ctx.weight_paths` maps each to a local folder (None with --weights random).

`run_setup` runs one setup once, in a fresh process of its own (the runner's worker), and returns
metric values by name. Running out of memory is reported by raising (the worker classifies the
exception as `oom`); anything else raised is an `error` result. The catalog entry (catalog.py)
holds the metadata the launcher sees: setups, image, dependencies, expected duration, cost basis.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpubench.catalog import WorkloadSpec


@dataclass(frozen=True)
class MetricDef:
    unit: str
    better: Literal["higher", "lower"] | None = None


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


class ConfigError(ValueError):
    """A bad --set override or config; str() is a one-line message."""


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


def _coerce(name: str, raw: str, annotation: Any) -> Any:
    target = annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        target = next(a for a in typing.get_args(annotation) if a is not type(None))
    try:
        if target is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if target in (int, float, str):
            return target(raw)
    except ValueError:
        raise ConfigError(f"--set {name}={raw}: expected {target.__name__}") from None
    raise ConfigError(f"--set {name}: fields of type {annotation} cannot be set from the command line")


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--set {pair!r}: use --set name=value")
        overrides[name.strip()] = value.strip()
    return overrides


def build_config(module: types.ModuleType, smoke: bool, overrides: dict[str, str]) -> Any:
    """The study's defaults, then the smoke size if asked, then the user's --set overrides."""
    config_cls = module.Config
    hints = typing.get_type_hints(config_cls)
    fields = {f.name for f in dataclasses.fields(config_cls)}
    values: dict[str, Any] = dict(module.SMOKE) if smoke else {}
    for name, raw in overrides.items():
        if name not in fields:
            raise ConfigError(f"--set {name}: unknown config field; valid: {', '.join(sorted(fields))}")
        values[name] = _coerce(name, raw, hints[name])
    return config_cls(**values)
