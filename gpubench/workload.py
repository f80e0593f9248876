"""The workload interface: what a workload module under workloads/ provides, and the one reader of it.

A workload module defines, at module level (and imports its heavy libraries inside functions):

    @dataclass
    class Config:            # field defaults are the study's own setup, each declared (config_fields.param):
        batch: int = param(4, "sequences per step", min=1)   # meaning, type, range or choices
        def __post_init__(self): ...   # optional: rules across fields, raising ConfigError
    SMOKE: dict              # overrides that make a CPU-sized run of the same code path, in seconds
    METRICS: dict[str, MetricDef]   # every metric it may report, with unit and direction
    def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]

and optionally SETUPS (each catalog setup's recipe, keyed and ordered as the catalog's setups), HEADLINE,
SETUP_NOTES, TIMED_PHASES, weights_for, processes, session_key + open_session, derive and table_notes.
`WorkloadDefinition` below is the one list of these parts (`PARTS`): `load(spec)` imports the module and checks
it once, and the harness reads a workload only through the definition. A part missing, of the wrong kind, or
misspelled (a module-level `HEADLNE`) is a `WorkloadError` naming the parts.

`run_setup` runs one setup once, in a fresh process of its own (the runner's worker), and returns
metric values by name. Running out of memory is reported by raising (the worker classifies the
exception as `oom`); `SetupSkipped` makes a `skipped` row with its reason; anything else raised is an
`error` result. Facts that are not numbers (a data set's revision, a topology) go in `ctx.info`. Peak memory is read
through the harness's tracker, `ctx.memory` (`reset(device)`, `peak(device)`), never torch's allocator. The harness
records on every result the device it ran on (the config's `device`, resolved) and the dtype it computed in (the
config's `dtype`, or `ctx.dtype` where the workload chose another), and what the machine did: no workload says those.

The optional functions change how setups are run, for every workload alike:
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
The catalog entry (catalog.py) holds the metadata the launcher sees: setup names, image, dependencies,
expected duration, cost basis.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpubench import config_fields
from gpubench.catalog import WorkloadSpec
from gpubench.config_fields import ConfigError  # noqa: F401  (re-exported: workloads raise it)
from gpubench.schema import COST_ROLE, Metric, MetricRole


@dataclass(frozen=True)
class MetricDef:
    unit: str
    better: Literal["higher", "lower"] | None = None
    help: str = ""  # what the number is, for `gpubench show`
    # what kind of figure it is (schema's *_ROLE: peak memory, cost, energy...), carried by the record; readers pick
    # their memory, cost and energy columns by it
    role: MetricRole | None = None
    # a cost the harness computes (gpubench/pricing.cost_metrics): the catalog's cost basis applied to this other
    # metric of the result (a second rate: embed's tuned passages/s) at the run's price; its role is cost
    cost_of: str | None = None

    def metric(self, value: float) -> Metric:
        """The value as a record's metric, with this definition's unit, direction and role."""
        return Metric(value=value, unit=self.unit, better=self.better, role=self.role)


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
    rank: int = 0
    world_size: int = 1
    session: Any = None  # what the workload's open_session yielded, for setups that share one
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)  # extra values for this result
    info: dict[str, Any] = dataclasses.field(default_factory=dict)  # non-numeric facts for this result
    # the dtype the setup computed in, where its config's `dtype` does not say it (a CPU's float32, a fixed bf16)
    dtype: str | None = None
    # the harness's peak-memory tracker for this setup (gpubench/measure/gpu_memory.MemoryTracker), set by the worker
    memory: Any = None


class SetupSkipped(Exception):
    """A setup that cannot run here for a stated reason (no hub, too few GPUs); never a made-up number."""


class NotImplementedWorkload(ValueError):
    def __init__(self, spec: WorkloadSpec):
        super().__init__(f"workload {spec.name!r} is in the catalog but its code is not written yet")


class WorkloadError(TypeError):
    """A workload module that does not keep the contract (a part missing, misspelled or of the wrong kind)."""


PART = "part"  # the dataclass field metadata key: the module-level name a workload writes


def _part(module_name: str, required: bool = False, default: Any = None, factory=None, function: bool = False) -> Any:
    meta = {PART: module_name, "required": required, "function": function}
    if required:
        return dataclasses.field(metadata=meta)
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class WorkloadDefinition:
    """A workload module read once and checked: every part a workload may define, each under the module-level name
    it is written as (`PARTS`). The harness reads a workload only through this (never `getattr` on the module)."""

    spec: WorkloadSpec
    config: type = _part("Config", required=True)
    smoke: dict[str, Any] = _part("SMOKE", required=True)
    metrics: dict[str, MetricDef] = _part("METRICS", required=True)
    run_setup: Callable[..., dict[str, float]] = _part("run_setup", required=True, function=True)
    # setup name -> its recipe (whatever run_setup reads); the names are the catalog's, in its order
    setups: dict[str, Any] = _part("SETUPS", factory=dict)
    headline: tuple[str, ...] = _part("HEADLINE", default=())  # the summary's columns, in the post's order
    setup_notes: dict[str, str] = _part("SETUP_NOTES", factory=dict)  # one line per setup for `gpubench show`
    timed_phases: tuple[str, ...] = _part("TIMED_PHASES", default=None)  # what utilisation is summarised over
    weights_for: Callable[[str, Any], list[str]] | None = _part("weights_for", function=True)
    processes: Callable[[str, Any], int] | None = _part("processes", function=True)
    session_key: Callable[[str, Any], str] | None = _part("session_key", function=True)
    open_session: Callable[..., Any] | None = _part("open_session", function=True)
    derive: Callable[[Any, list], dict[str, dict[str, float]]] | None = _part("derive", function=True)
    # lines for summary.md above the table (the latency target a serving study judged by); main's runner reads it
    table_notes: Callable[[Any], list[str]] | None = _part("table_notes", function=True)

    @classmethod
    def from_module(cls, spec: WorkloadSpec, module: types.ModuleType) -> WorkloadDefinition:
        where, parts = spec.module, PARTS
        defined = {name for name, value in vars(module).items()
                   if not name.startswith("_") and getattr(value, "__module__", module.__name__) == module.__name__}
        for name in sorted(defined - set(parts)):
            close = difflib.get_close_matches(name, parts, n=1, cutoff=0.8)
            if close:
                raise WorkloadError(f"{where} defines {name}, which is not a workload part (did you mean "
                                    f"{close[0]}?); parts: {', '.join(parts)}")
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if PART not in field.metadata:
                continue
            name = field.metadata[PART]
            if hasattr(module, name):
                values[field.name] = getattr(module, name)
            elif field.metadata["required"]:
                raise WorkloadError(f"{where} does not define {name}; a workload defines "
                                    f"{', '.join(n for n, required in parts.items() if required)}")
        setups = values.get("setups")
        if setups is not None and not isinstance(setups, Mapping):
            raise WorkloadError(f"{where}: SETUPS maps each setup name to its recipe (a dict)")
        values["setups"] = dict(setups or dict.fromkeys(spec.setups))
        for name in ("headline", "timed_phases"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        definition = cls(spec=spec, **values)
        definition._check(where)
        return definition

    def _check(self, where: str) -> None:
        if not (isinstance(self.config, type) and dataclasses.is_dataclass(self.config)):
            raise WorkloadError(f"{where}: Config must be a dataclass")
        fields = [f.name for f in dataclasses.fields(self.config)]
        for name in self.smoke:
            if name not in fields:
                raise WorkloadError(f"{where}: SMOKE sets {name!r}, which is not a Config field; fields: "
                                    f"{', '.join(fields)}")
        for name, metric in self.metrics.items():
            if not isinstance(metric, MetricDef):
                raise WorkloadError(f"{where}: METRICS[{name!r}] must be a MetricDef")
        if tuple(self.setups) != self.spec.setups:
            missing = [s for s in self.spec.setups if s not in self.setups]
            extra = [s for s in self.setups if s not in self.spec.setups]
            raise WorkloadError(f"{where}: SETUPS must be the catalog's setups of {self.spec.name!r} in its order"
                                + (f"; missing {', '.join(missing)}" if missing else "")
                                + (f"; not in the catalog {', '.join(extra)}" if extra else ""))
        unknown = [s for s in self.setup_notes if s not in self.setups]
        if unknown:
            raise WorkloadError(f"{where}: SETUP_NOTES names {', '.join(unknown)}, not setups of {self.spec.name!r}")
        if self.open_session is not None and self.session_key is None:
            raise WorkloadError(f"{where}: open_session needs session_key (which setups share a session)")
        if self.spec.cost and self.spec.cost.metric not in self.metrics:
            raise WorkloadError(f"{where}: the catalog's cost metric {self.spec.cost.metric!r} is not in METRICS")
        for name, metric in self.metrics.items():
            if metric.cost_of is None:
                continue
            if self.spec.cost is None or metric.cost_of not in self.metrics or metric.role != COST_ROLE:
                raise WorkloadError(f"{where}: METRICS[{name!r}] is a cost of {metric.cost_of!r}: that needs the "
                                    "catalog's cost basis, the metric in METRICS and role=COST_ROLE")
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.metadata.get("function") and value is not None and not callable(value):
                raise WorkloadError(f"{where}: {field.metadata[PART]} must be a function")

    # What the harness asks of a workload, each with its default where the module leaves a part out.
    def processes_for(self, setup: str, config: Any) -> int:
        return int(self.processes(setup, config)) if self.processes else 1

    def weights(self, setups: list[str], config: Any) -> list[str]:
        """The repos the chosen setups load: the module says when it knows better than the catalog."""
        if self.weights_for is None:
            return list(self.spec.weights)
        return list(dict.fromkeys(repo for setup in setups for repo in self.weights_for(setup, config)))

    def notes(self, config: Any) -> list[str]:
        return list(self.table_notes(config)) if self.table_notes else []


# module-level name -> required?, in the order a workload writes them; the one list of workload parts
PARTS: dict[str, bool] = {f.metadata[PART]: f.metadata["required"]
                          for f in dataclasses.fields(WorkloadDefinition) if PART in f.metadata}


def load(spec: WorkloadSpec) -> WorkloadDefinition:
    """The workload's definition: its module imported and checked against the contract (WorkloadError if not)."""
    if spec.module is None:
        raise NotImplementedWorkload(spec)
    return WorkloadDefinition.from_module(spec, importlib.import_module(spec.module))


def groups(workload: WorkloadDefinition, setups: list[str], config: Any) -> list[list[str]]:
    """The setups in run order, adjacent ones that share a session key together; one worker per group."""
    if workload.session_key is None:
        return [[setup] for setup in setups]
    out: list[list[str]] = []
    last = object()
    for setup in setups:
        key = workload.session_key(setup, config)
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


def build_config(workload: WorkloadDefinition, smoke: bool, overrides: dict[str, str]) -> Any:
    """The study's defaults, then the smoke size if asked, then the user's --set overrides, each field checked
    against its declaration (gpubench/config_fields.py)."""
    values: dict[str, Any] = dict(workload.smoke) if smoke else {}
    for name, raw in overrides.items():
        values[name] = config_fields.parse(workload.config, name, raw)
    config = workload.config(**values)  # its __post_init__ checks rules across fields (ConfigError)
    config_fields.check(config)
    return config
