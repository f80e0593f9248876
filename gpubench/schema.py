"""The result schema: the contract between workloads, the runner, the stores and the launcher.

A run writes JSON Lines to stdout, one record per line. Every record carries the schema version,
its kind, the run id and a UTC timestamp. Readers parse a line with `parse_record`; a line that is
not a record (a library's chatter, a traceback) is returned as None and belongs in the raw log.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_serializer, model_validator

SCHEMA_VERSION = "1.5"  # 1.1: result `info`, `derived` records; 1.2: result `energy` and `verdict`, one peak memory;
# 1.3: result `utilisation`, `dtype` and `device_name` (the harness's facts, out of info), `device` without the name;
# 1.4: a metric's `role`; the run's hourly price on `run_started` (before: in the environment block);
# 1.5: a run_finished summary's `not-run` status, for a setup the run ended before (it had said `skipped`)

# Peak-memory metrics as results before 1.2 named them -> (the name now, factor to GiB). A GPU's peak and the
# host's peak RSS (on a CPU run) are one figure now: the peak memory of the device the setup ran on.
PEAK_MEMORY = "peak_mem_gib"
LEGACY_METRICS = {
    "peak_mem_gb": (PEAK_MEMORY, 1e9 / 2**30), "peak_vram_gb": (PEAK_MEMORY, 1e9 / 2**30),
    "peak_gpu_mem_gib": (PEAK_MEMORY, 1.0), "peak_rss_gb": (PEAK_MEMORY, 1e9 / 2**30),
    "peak_rss_gib": (PEAK_MEMORY, 1.0), "tuned_peak_mem_gb": ("tuned_peak_mem_gib", 1e9 / 2**30),
}
GIB = "GiB"

# What kind of figure a metric is, declared once where the metric is defined (workload.MetricDef's role: a workload's
# METRICS, the harness's own, pricing's cost metrics) and carried by each record (1.4), so a reader picks the memory,
# cost and energy columns by it, never by the metric's name.
PEAK_MEMORY_ROLE = "peak_memory"  # the peak memory of a device or a part of the run (GiB)
COST_ROLE = "cost"  # dollars per unit of output
VALUE_ROLE = "value"  # units of output per dollar
ENERGY_ROLE = "energy"  # the GPUs' energy (J) or average draw (W) over the timed part
ENERGY_PER_UNIT_ROLE = "energy_per_unit"  # joules per unit of output
MetricRole = Literal["peak_memory", "cost", "value", "energy", "energy_per_unit"]

Status = Literal["ok", "oom", "error", "skipped"]


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


AMOUNTS = ("J", "W", "USD")  # units of energy, power and money: a figure in one (J/image, 1M tokens/USD) is >= 0


class _WithRole(_Model):
    """A metric or its summary: `role` is written only when it has one (most metrics have none)."""

    @model_serializer(mode="wrap")
    def _role_when_set(self, handler):
        data = handler(self)
        if isinstance(data, dict) and data.get("role") is None:
            data.pop("role", None)
        return data


class Metric(_WithRole):
    value: float = Field(allow_inf_nan=False)  # JSON has no NaN: pydantic would write null, unreadable back
    unit: str
    better: Literal["higher", "lower"] | None = None
    role: MetricRole | None = Field(None, description="what kind of figure it is (1.4); left out: none of the roles")

    @model_validator(mode="after")
    def _not_a_negative_amount(self) -> Metric:
        """A negative energy, power or price is damage (a counter read wrong, an edit), refused as NaN is: it would
        otherwise be shown, and win "least energy". The unit says what a figure is; its name is the workload's."""
        parts = self.unit.split("/")
        if self.value < 0 and (parts[0] in AMOUNTS or parts[-1] in AMOUNTS):
            raise ValueError(f"{self.value:g} {self.unit}: an energy, power or price cannot be negative")
        return self


class GpuInfo(_Model):
    name: str
    memory_gb: float | None = None
    uuid: str | None = None


class Environment(_Model):
    """Where a run ran. Fields that could not be read are None, never guessed."""

    hostname_hash: str | None = Field(None, description="sha256 prefix of the hostname, not the name")
    gpus: list[GpuInfo] = []
    gpu_count: int = 0
    driver_version: str | None = None
    cuda_version: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    cpus_usable: int | None = Field(None, description="CPUs this process may run on (its affinity mask): under a"
                                                      " batch scheduler, those its job was given")
    allocation: dict[str, str] = Field(default_factory=dict, description="what a batch scheduler says it gave the"
                                       " job (Slurm: SLURM_JOB_ID, SLURM_CPUS_ON_NODE, SLURM_JOB_CPUS_PER_NODE, ...)")
    ram_gb: float | None = None
    python: str
    platform: str
    libraries: dict[str, str | None] = {}
    image: str | None = Field(None, description="GPUBENCH_IMAGE, set by the image")
    image_version: str | None = None
    image_digest: str | None = Field(None, description="GPUBENCH_IMAGE_DIGEST, set by CI or the launcher")
    git_commit: str | None = None
    launcher: str | None = Field(None, description="GPUBENCH_LAUNCHER, e.g. runcrate-job")
    gpu_requested: str | None = Field(None, description="GPUBENCH_GPU_REQUESTED, set by a launcher")
    provider_job_id: str | None = None


class _Record(_Model):
    schema_version: str = SCHEMA_VERSION
    run_id: str
    ts: str = Field(default_factory=utc_now)


class RunStarted(_Record):
    kind: Literal["run_started"] = "run_started"
    workload: str
    study: str
    setups: list[str]
    repeats: int
    smoke: bool
    config: dict[str, Any] = Field(description="the full workload config, after overrides")
    environment: Environment
    price_usd_per_hour: float | None = Field(None, description="the hourly price the run's costs use, a fact of the "
                                                               "run (1.4; before, the environment block's)")

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        return upgraded(data)


class Progress(_Record):
    kind: Literal["progress"] = "progress"
    phase: str
    setup: str | None = None
    repeat: int | None = None
    done: int | None = None
    total: int | None = None
    message: str | None = None


class EnergyFacts(_Model):
    """Where a result's energy figures (metrics energy_j, avg_power_w, j_per_*) came from, or why it has none."""

    source: str | None = Field(None, description="NVML's total-energy counter, the integral of sampled power, or both")
    gpus: list[int] = Field([], description="the NVML indices (of the visible GPUs) summed")
    seconds: float | None = Field(None, description="the timed part the energy covers")
    power_integral_j: float | None = Field(None, description="sampled power integrated over the same part: a check")
    absent: str | None = Field(None, description="why there is no energy figure (a CPU run, NVML absent)")


class VerdictFacts(_Model):
    """What bounded an ok result (gpubench/results/verdict.py): the label, the rule met and the figures it rests on."""

    label: str
    basis: str
    figures: dict[str, float] = {}


VERDICT_INFO = ("verdict", "verdict_basis", "verdict_figures")  # where results before 1.2 kept it, in info


class BusiestThread(_Model):
    """The host thread that was the busiest in the most sampled intervals."""

    name: str = Field(description="its name (comm); '?' when it had gone before it could be read")
    role: str | None = Field(None, description="its process's role (data/process_roles.csv), e.g. engine_core")
    pid: int
    tid: int
    busiest_in: int = Field(description="the intervals in which it was the busiest thread")
    intervals: int = Field(description="the intervals sampled")


class UtilisationFacts(_Model):
    """What the utilisation sampler (gpubench/run/utilisation.py) covered, or why it sampled nothing. Its figures
    are metrics (util_samples, gpu_busy_pct, host_cpu_pct...); these are the facts that say what they cover."""

    scope: Literal["timed", "setup"] | None = Field(
        None, description="timed: the workload's timed phases; setup: the whole setup (it reported no timed phase)")
    samples: int | None = Field(None, description="the samples summarised")
    seconds: float | None = Field(None, description="the time those samples span; None before 1.3")
    sample_s: float | None = Field(None, description="the sampling interval")
    cores: int | None = Field(None, description="the CPUs the worker could run on")
    gpu_index: int | None = Field(None, description="the visible GPU the GPU figures are of: the busiest")
    gpu_busy_pct_each: list[float] = Field([], description="each visible GPU's mean busy share, when several")
    clock_event_reasons_pct: dict[str, float] = Field({}, description="clock-event reason -> % of the samples")
    busiest_thread: BusiestThread | None = None
    no_gpu_figures: str | None = Field(None, description="why there are no GPU figures (NVML's reason)")
    not_sampled: str | None = Field(None, description="why nothing was sampled: GPUBENCH_UTILISATION=off")


class SetupResult(_Record):
    kind: Literal["result"] = "result"
    setup: str
    repeat: int
    status: Status
    metrics: dict[str, Metric] = {}
    error: str | None = None
    device: str | None = Field(None, description='the device the setup ran on, "cuda:N" or "cpu" (the config\'s, '
                                                 'resolved; before 1.3 a GPU\'s name followed: "cuda:0 NVIDIA H200")')
    device_name: str | None = Field(None, description="the GPU's name as torch gives it, when it ran on one")
    dtype: str | None = Field(None, description="the dtype its compute ran in (its matmuls), when it has one")
    duration_s: float | None = None
    info: dict[str, Any] = Field({}, description="non-numeric facts: a data set's revision, a topology, a reason")
    energy: EnergyFacts | None = Field(None, description="ok results of schema 1.2 on: the energy's source or absence")
    verdict: VerdictFacts | None = Field(None, description="what bounded an ok result, added by the runner")
    utilisation: UtilisationFacts | None = Field(None, description="what the utilisation figures cover, or why none")

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        return upgraded(data)

    @model_validator(mode="after")
    def _no_negative_peak(self) -> SetupResult:
        _check_peak(self.metrics)
        return self


def _check_peak(metrics: dict[str, Metric]) -> None:
    """Peak memory is an amount too (its unit, GiB, is also the unit of differences such as peak_mem_over_lora_gib,
    which may be negative): refused by name."""
    peak = metrics.get(PEAK_MEMORY)
    if peak is not None and peak.value < 0:
        raise ValueError(f"{PEAK_MEMORY} {peak.value:g} {peak.unit}: a peak memory cannot be negative")


def upgraded(data: Any) -> Any:
    """A result or derived record as stored before 1.4, with its peak memory under today's name and unit (a GPU's
    peak wins over the host's RSS where a record had both), its verdict, utilisation, dtype and device out of
    info into their fields (before 1.3) and its metrics' roles by their names (before 1.4: `legacy_role`); a
    run_finished record's summaries with their roles likewise; other records and newer ones as they are."""
    if not isinstance(data, dict):
        return data
    if data.get("kind") == "run_finished" and _older_than(data, (1, 4)):
        return _summary_roles(data)
    if data.get("kind") == "run_started" and _older_than(data, (1, 4)):
        return _price_out_of_environment(data)
    if data.get("kind") == "result" and _older_than(data, (1, 3)):
        data = _harness_facts_out_of_info(data)
    info = data.get("info")
    if isinstance(info, dict) and info.get("verdict") and data.get("verdict") is None:
        data = {**data, "info": {k: v for k, v in info.items() if k not in VERDICT_INFO},
                "verdict": {"label": info["verdict"], "basis": info.get("verdict_basis") or "",
                            "figures": info.get("verdict_figures") or {}}}
    if not isinstance(data.get("metrics"), dict) or not any(name in LEGACY_METRICS for name in data["metrics"]):
        return _metric_roles(data)
    metrics = {}
    for name, metric in data["metrics"].items():
        new, factor = LEGACY_METRICS.get(name, (name, None))
        if factor is None or not isinstance(metric, dict):
            metrics.setdefault(name, metric)
            continue
        if new in metrics and name.startswith("peak_rss"):
            continue  # the GPU's figure is the device's peak
        metrics[new] = {**metric, "value": metric["value"] * factor, "unit": GIB}
    return _metric_roles({**data, "metrics": metrics})


def legacy_role(name: str) -> MetricRole | None:
    """The role a metric stored before 1.4 (records carried none) is read with, from the harness's names for its
    figures: peak memory (peak_mem_gib, embed's tuned_peak_mem_gib, and their names before 1.2), dollars per unit
    (usd_per_<unit>, and a workload's own <what>_usd_per_<unit>), units per dollar (<unit>_per_usd), joules per unit
    (j_per_<unit>), the energy figures (energy_j, avg_power_w). Any other name has no role: a plain figure, never a
    memory, cost or energy column. Records of 1.4 on carry the role their metric was declared with."""
    if name.endswith(PEAK_MEMORY) or name in LEGACY_METRICS:
        return PEAK_MEMORY_ROLE
    if name.startswith("usd_per_") or "_usd_per_" in name:
        return COST_ROLE
    if name.endswith("_per_usd"):
        return VALUE_ROLE
    if name.startswith("j_per_"):
        return ENERGY_PER_UNIT_ROLE
    if name in ("energy_j", "avg_power_w"):
        return ENERGY_ROLE
    return None


def _price_out_of_environment(data: dict[str, Any]) -> dict[str, Any]:
    """A run_started record before 1.4 with its hourly price out of the environment block, onto the record."""
    env = data.get("environment")
    if not isinstance(env, dict) or "price_usd_per_hour" not in env:
        return data
    env = {**env}
    price = env.pop("price_usd_per_hour")
    return {**data, "environment": env, "price_usd_per_hour": data.get("price_usd_per_hour", price)}


def _metric_roles(data: dict[str, Any]) -> dict[str, Any]:
    """A result or derived record before 1.4 with each metric's role by `legacy_role`."""
    metrics = data.get("metrics")
    if not _older_than(data, (1, 4)) or not isinstance(metrics, dict):
        return data
    return {**data, "metrics": {name: {**metric, "role": metric.get("role") or legacy_role(name)}
                                if isinstance(metric, dict) else metric for name, metric in metrics.items()}}


def _summary_roles(data: dict[str, Any]) -> dict[str, Any]:
    """A run_finished record before 1.4 with each summarised metric's role by `legacy_role`."""
    summary = data.get("summary")
    if not isinstance(summary, list):
        return data
    setups = []
    for setup in summary:
        metrics = setup.get("metrics") if isinstance(setup, dict) else None
        if isinstance(metrics, dict):
            setup = {**setup, "metrics": {name: {**m, "role": m.get("role") or legacy_role(name)}
                                          if isinstance(m, dict) else m for name, m in metrics.items()}}
        setups.append(setup)
    return {**data, "summary": setups}


def _older_than(data: dict[str, Any], version: tuple[int, int]) -> bool:
    """Whether a record as read says an older version; one made in code (no version yet) is current."""
    try:
        return tuple(int(part) for part in str(data["schema_version"]).split(".")[:2]) < version
    except (KeyError, ValueError):
        return False


# Where results before 1.3 kept the harness's facts, in info: the sampler's, and the dtype the workload said it
# computed in (compute_dtype, else dtype); their device named the GPU after its index.
UTILISATION_INFO, DTYPE_INFO = "utilisation", ("compute_dtype", "dtype")
_NAMED_DEVICE = re.compile(r"(cuda:\d+) (.+)")
_THREAD = re.compile(r"(?P<label>.*) \(pid (?P<pid>\d+), tid (?P<tid>\d+); busiest in (?P<n>\d+) of (?P<of>\d+)\)")


def _harness_facts_out_of_info(data: dict[str, Any]) -> dict[str, Any]:
    """A result stored before 1.3 with the sampler's facts, the dtype and the device in their fields. A device only
    info named (CTranslate2's, when torch was not loaded) becomes the device."""
    data = {**data}
    device = data.get("device")
    named = _NAMED_DEVICE.fullmatch(device) if isinstance(device, str) else None
    if named and data.get("device_name") is None:
        data["device"], data["device_name"] = named.groups()
    if not isinstance(data.get("info"), dict):
        return data
    info = data["info"] = {**data["info"]}
    sampled = info.pop(UTILISATION_INFO, None)
    if isinstance(sampled, dict) and data.get("utilisation") is None:
        data["utilisation"] = _utilisation_from_info(sampled, data.get("metrics"))
    said = [info.pop(key, None) for key in DTYPE_INFO]
    if data.get("dtype") is None:
        data["dtype"] = next((str(dtype) for dtype in said if dtype), None)
    said_device = info.pop("device", None)
    if data.get("device") is None and isinstance(said_device, str):
        data["device"] = said_device
    return data


def _utilisation_from_info(info: dict[str, Any], metrics: Any) -> dict[str, Any]:
    samples = metrics.get("util_samples") if isinstance(metrics, dict) else None
    scope = info.get("scope")
    return {
        "scope": None if scope is None else "timed" if scope == "timed" else "setup",
        "samples": int(samples["value"]) if isinstance(samples, dict) and samples.get("value") is not None else None,
        "sample_s": info.get("sample_s"), "cores": info.get("cores"), "gpu_index": info.get("gpu_index"),
        "gpu_busy_pct_each": info.get("gpu_busy_pct_each") or [],
        "clock_event_reasons_pct": info.get("clock_event_reasons_pct") or {},
        "busiest_thread": _thread_from_text(info.get("busiest_thread")),
        "no_gpu_figures": info.get("no_gpu_figures"), "not_sampled": info.get("off"),
    }


def _thread_from_text(text: Any) -> dict[str, Any] | None:
    """The busiest thread from its line before 1.3: "VLLM::EngineCor, vLLM's engine core (pid 2736, tid 2736;
    busiest in 182 of 185)", the role's label after a comma when its process had one."""
    found = _THREAD.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    from gpubench.process_roles import ROLE_LABELS  # only old records need it: the launcher reads no CSV

    name, role = found["label"], None
    for key, label in ROLE_LABELS.items():
        if name.endswith(f", {label}"):
            name, role = name.removesuffix(f", {label}"), key
            break
    return {"name": name, "role": role, "pid": int(found["pid"]), "tid": int(found["tid"]),
            "busiest_in": int(found["n"]), "intervals": int(found["of"])}


class Derived(_Record):
    """Metrics of one setup that need other setups' results (a speed-up against the baseline setup)."""

    kind: Literal["derived"] = "derived"
    setup: str
    repeat: int
    metrics: dict[str, Metric]

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        return upgraded(data)

    @model_validator(mode="after")
    def _no_negative_peak(self) -> Derived:
        _check_peak(self.metrics)
        return self


class MetricSummary(_WithRole):
    unit: str
    role: MetricRole | None = None  # the metric's, as its results carry it (1.4)
    n: int
    median: float
    min: float
    max: float
    mean: float
    stdev: float
    cv: float | None = Field(description="stdev / mean; None when the mean is 0")


class SetupSummary(_Model):
    setup: str
    status: Status | Literal["not-run"]  # not-run: no result, the run ended (interrupted, failed) before it
    ok_repeats: int
    repeats: int
    metrics: dict[str, MetricSummary] = {}


class RunFinished(_Record):
    kind: Literal["run_finished"] = "run_finished"
    status: Literal["ok", "partial", "failed", "interrupted"]
    duration_s: float
    summary: list[SetupSummary]

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        return upgraded(data)


Record = Annotated[RunStarted | Progress | SetupResult | Derived | RunFinished, Field(discriminator="kind")]
_RECORD = TypeAdapter(Record)


def split_finite(values: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """A setup's values as floats: those a record can carry, and the NaN/inf ones by name with what they were
    ("nan", "inf", "-inf"), which its result keeps in `info["not_finite"]` instead of losing the whole record."""
    kept: dict[str, float] = {}
    dropped: dict[str, str] = {}
    for name, value in values.items():
        number = float(value)
        if math.isfinite(number):
            kept[name] = number
        else:
            dropped[name] = str(number)
    return kept, dropped


NOT_FINITE = "not_finite"  # the result's info key naming the metrics left out


def _without_null_metrics(data: dict[str, Any]) -> None:
    """A record written before metrics were checked for NaN/inf has them as null: keep the record, name them."""
    metrics = data.get("metrics")
    if data.get("kind") not in ("result", "derived") or not isinstance(metrics, dict):
        return
    nulls = [name for name, m in metrics.items() if isinstance(m, dict) and m.get("value", 0) is None]
    if not nulls:
        return
    data["metrics"] = {name: m for name, m in metrics.items() if name not in nulls}
    if data["kind"] == "result" and isinstance(data.get("info", {}), dict):
        data["info"] = {**data.get("info", {}), NOT_FINITE: {**{n: "null" for n in nulls},
                                                             **data.get("info", {}).get(NOT_FINITE, {})}}


def to_line(record: BaseModel) -> str:
    return record.model_dump_json(exclude_none=False)


def parse_record(line: str) -> RunStarted | Progress | SetupResult | Derived | RunFinished | None:
    """A record from one line of output, or None when the line is not a gpubench record."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or "kind" not in data or "schema_version" not in data:
        return None
    major = str(data["schema_version"]).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise ValueError(f"unsupported schema_version {data['schema_version']!r} (this reader: {SCHEMA_VERSION})")
    _without_null_metrics(data)
    try:
        return _RECORD.validate_python(data)
    except ValidationError:
        return None


def unreadable(line: str) -> str:
    """Why a line that looked like a record (a JSON object) is none: "cut short or not JSON", or the first field
    that fails the schema with what is wrong with it ("metrics.tokens_per_s.value: NaN, not a finite number")."""
    line = line.strip()
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg} at column {exc.colno}): cut short or edited"
    if not isinstance(data, dict) or "kind" not in data or "schema_version" not in data:
        return "a JSON line that is no record (no kind or schema_version)"
    _without_null_metrics(data)
    try:
        _RECORD.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"][1:])  # [0] is the kind's tag
        value = error.get("input")
        said = f" = {value!r}" if isinstance(value, float | int | str) and len(repr(value)) <= 40 else ""
        message = error["msg"].removeprefix("Value error, ")
        return f"{where}{said}: " * bool(where) + f"{message[0].lower()}{message[1:]}"
    return "a record (read)"


def json_schema() -> dict[str, Any]:
    schema = _RECORD.json_schema()
    schema["title"] = f"gpubench record v{SCHEMA_VERSION}"
    return schema


def summarize(unit: str, values: list[float], role: MetricRole | None = None) -> MetricSummary:
    n = len(values)
    ordered = sorted(values)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    mean = sum(values) / n
    stdev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return MetricSummary(
        unit=unit, role=role, n=n, median=median, min=ordered[0], max=ordered[-1], mean=mean, stdev=stdev,
        cv=(stdev / mean) if mean else None,
    )


def summarize_results(setups: list[str], results: list[SetupResult]) -> list[SetupSummary]:
    """Per setup: median, min, max, mean, stdev and CV of every metric over its ok repeats."""
    out = []
    for setup in setups:
        rows = [r for r in results if r.setup == setup]
        ok = [r for r in rows if r.status == "ok"]
        metrics: dict[str, MetricSummary] = {}
        for name in dict.fromkeys(k for r in ok for k in r.metrics):
            values = [r.metrics[name].value for r in ok if name in r.metrics]
            first = next(r.metrics[name] for r in ok if name in r.metrics)
            metrics[name] = summarize(first.unit, values, first.role)
        if ok:
            status: Status = "ok"
        elif rows:
            status = "oom" if all(r.status == "oom" for r in rows) else rows[-1].status
        else:
            status = "not-run"
        out.append(SetupSummary(setup=setup, status=status, ok_repeats=len(ok), repeats=len(rows), metrics=metrics))
    return out
