"""The launch plan: which workload and setups, on which GPUs at what price, with which image,
command and environment. Built from catalog metadata and what the provider offers (provider.py); nothing here runs.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from gpubench import __version__
from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.registry import UnknownName, pick
from gpubench.run_args import RunArgs, split_setups
from gpubench.runid import new_run_id

from .errors import LaunchError


def norm_gpu(name: str) -> str:
    """A GPU name without case, spaces, '-' or '_': H100-SXM, h100_sxm and "H100 SXM" are one name."""
    return re.sub(r"[\s_-]", "", name).lower()


@dataclass(frozen=True)
class GpuChoice:
    """One --gpu value as a provider offers it (Provider.offer)."""

    requested: str  # as the user wrote it
    gpu_type: str  # the provider's spelling
    count: int
    rows: tuple[Any, ...]  # its price rows (Runcrate's instance types: one per region and deployment), cheapest
    # first; none where nothing is billed (an owned cluster or host)

    @property
    def price(self) -> float | None:
        """The cheapest region's rate: what an estimate expects."""
        return self.rows[0].hourly_rate if self.rows else None

    @property
    def dearest(self) -> float | None:
        """The dearest region's rate: what a worst case must assume (the job may land there)."""
        return max(t.hourly_rate for t in self.rows) if self.rows else None

    def rate_in(self, region: str | None) -> float | None:
        """The rate of the instance actually obtained, by its region; None when the region is not among the rows."""
        rates = [t.hourly_rate for t in self.rows if region and t.region == region]
        return min(rates) if rates else None

    @property
    def wire(self) -> str:
        """The jobs API entry: NAME, or NAME:N for several GPUs."""
        return self.gpu_type if self.count == 1 else f"{self.gpu_type}:{self.count}"


def split_count(requested: str, default_count: int) -> tuple[str, int]:
    name, sep, count_text = requested.strip().partition(":")
    if not name:
        raise LaunchError(f"bad --gpu {requested!r}: give a GPU name, e.g. L40S or A100-80GB:2")
    if not sep:
        return name, default_count
    if not count_text.isdigit() or not 1 <= int(count_text) <= 8:
        raise LaunchError(f"bad --gpu {requested!r}: the count after ':' must be 1 to 8")
    return name, int(count_text)


def refuse_twice(gpus: list[GpuChoice]) -> None:
    """Each GPU (type and count) once: two --gpu values naming one are a mistake, whatever the provider (as
    fallbacks the second is never tried; with --each or on a cluster it is the same run twice)."""
    seen: dict[tuple[str, int], str] = {}
    for choice in gpus:
        key = (norm_gpu(choice.gpu_type), choice.count)
        if key in seen:
            raise LaunchError(f"the same GPU twice: --gpu {seen[key]} and --gpu {choice.requested} are both"
                              f" {choice.wire}; give each GPU once")
        seen[key] = choice.requested


def fitting(spec: WorkloadSpec, choices: list[GpuChoice], setups: list[str] | None, smoke: bool) -> list[GpuChoice]:
    """The candidates the workload fits (gpubench/gpu_fit.py), in order; each one left out says why in a line on
    stderr, and a LaunchError says why when none is left. Nothing is rented for a GPU that cannot run it."""
    import sys

    from gpubench.gpu_fit import why_unfit

    reasons = {c.requested: why_unfit(spec, c.gpu_type, c.count, setups, smoke) for c in choices}
    kept = [c for c in choices if reasons[c.requested] is None]
    refused = [f"{name}: {why}" for name, why in reasons.items() if why]
    if not kept:
        raise LaunchError(f"no --gpu fits {spec.name}: " + "; ".join(refused))
    for line in refused:
        sys.stderr.write(f"gpubench-launch: not using --gpu {line}\n")
    return kept


def resolve_workload(name: str) -> WorkloadSpec:
    try:
        spec = WORKLOADS.get(name)
    except UnknownName as exc:
        raise LaunchError(str(exc)) from None
    if not spec.implemented:
        ready = ", ".join(w.name for w in WORKLOADS if w.implemented) or "none yet"
        raise LaunchError(f"workload {name!r} is catalogued but not implemented yet; implemented: {ready}")
    return spec


def resolve_setups(spec: WorkloadSpec, setups: str | tuple[str, ...] | None) -> list[str] | None:
    requested = list(split_setups(setups))
    if not requested:
        return None
    try:
        return pick("setup", requested, spec.setups)
    except UnknownName as exc:
        raise LaunchError(f"{exc} (workload {spec.name})") from None


def check_overrides(overrides: tuple[str, ...] | list[str]) -> list[str]:
    """--set NAME=VALUE pairs, checked for form here (the launcher never imports workload code); names and values
    are checked against the workload's declarations by the job's own `gpubench run --check` (run_check.py)."""
    for pair in overrides:
        name, sep, _ = pair.partition("=")
        if not sep or not name.strip().isidentifier():
            raise LaunchError(f"bad --set {pair!r}: use NAME=VALUE with a config field of the workload"
                              " (gpubench show WORKLOAD lists them)")
    return list(overrides)


def run_command(spec: WorkloadSpec, setups: list[str] | None, smoke: bool, repeats: int | None,
                overrides: tuple[str, ...] | list[str] = (), weights: str | None = None) -> str:
    """The job's command: a plain `gpubench run` call (records on stdout, text on stderr), with what the
    user passed through (--set, --weights), so any local run can be reproduced on a rented GPU."""
    args = RunArgs(workload=spec.name, setups=tuple(setups or ()), smoke=smoke, repeats=repeats,
                   overrides=tuple(check_overrides(overrides)), weights=weights)
    return shlex.join(["gpubench", *args.to_argv()])


def image_digest(image: str) -> str | None:
    _, sep, digest = image.partition("@")
    return digest if sep and digest.startswith("sha256:") else None


@dataclass
class RunPlan:
    """One job (or instance): its run id and its GPU candidates, tried in order."""

    run_id: str
    candidates: list[GpuChoice]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def gpu_requested(self) -> str:
        return ",".join(c.requested for c in self.candidates)

    @property
    def label(self) -> str:
        return "|".join(c.wire for c in self.candidates)

    @property
    def price(self) -> float | None:
        """The hourly price the job costs its output at, when every candidate's cheapest region has the same one
        (else one per GPU type, matched by the job). A dearer region obtained is corrected by pricing()."""
        prices = {c.price for c in self.candidates}
        return prices.pop() if len(prices) == 1 else None

    def rate_obtained(self, gpu_type: str | None, region: str | None) -> float | None:
        """The hourly rate of the instance the job actually got (its GPU type and region)."""
        for choice in self.candidates:
            if gpu_type and choice.gpu_type.lower() == gpu_type.split(":")[0].lower():
                return choice.rate_in(region)
        return None


@dataclass
class LaunchPlan:
    workload: WorkloadSpec
    setups: list[str] | None
    smoke: bool
    repeats: int | None
    via: str | None  # how its provider runs it, where it has several ways (Runcrate: job | instance)
    image: str
    command: str
    max_runtime_minutes: int
    runs: list[RunPlan]
    max_cost: float | None = None
    max_minutes: float | None = None
    capacity_wait_minutes: int | None = None
    region: str | None = None
    deployment: str | None = None
    store_url: str | None = None
    results_dir: str = "gpubench-results"
    study: str | None = None  # first-matmul: the launcher times the launch itself
    template: str | None = None  # instance path: the Runcrate template to boot
    price_override: float | None = None  # --price: the hourly rate for cost metrics and estimates
    extra_tags: dict[str, str] = field(default_factory=dict)  # a sweep's: which sweep and cell a job is
    provider: str = "runcrate"  # the registry's name of where it runs (providers.py), set by Provider.shape
    settings: Any = None  # that provider's settings for it (a Slurm cluster's SlurmConfig, a Docker host)

    @property
    def launcher_name(self) -> str:
        """GPUBENCH_LAUNCHER, as the run's environment block records it: runcrate-job, runcrate-instance, slurm."""
        return f"{self.provider}-{self.via}" if self.via else self.provider

    def env_for(self, run: RunPlan) -> dict[str, str]:
        env = {
            "GPUBENCH_RUN_ID": run.run_id,
            "GPUBENCH_LAUNCHER": self.launcher_name,
            "GPUBENCH_GPU_REQUESTED": run.gpu_requested,
        }
        if self.price_override is not None:
            env["GPUBENCH_PRICE_USD_PER_HOUR"] = f"{self.price_override:g}"
        elif run.price is not None:
            env["GPUBENCH_PRICE_USD_PER_HOUR"] = f"{run.price:g}"
        elif all(c.price is not None for c in run.candidates):  # (not without prices: an offline dry run)
            env["GPUBENCH_PRICES_USD_PER_HOUR"] = ",".join(f"{c.wire}={c.price:g}" for c in run.candidates)
        digest = image_digest(self.image)
        if digest:
            env["GPUBENCH_IMAGE_DIGEST"] = digest
        return env

    def tags(self, run: RunPlan, launcher_tag: str) -> dict[str, str]:
        return {
            "gpubench": "1",
            "gpubench_run_id": run.run_id,
            "gpubench_workload": self.workload.name,
            "gpubench_launcher": launcher_tag,
            "gpubench_version": __version__,
            **self.extra_tags,
        }

    def job_spec(self, run: RunPlan, launcher_tag: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "name": f"gpubench-{run.run_id}",
            "image": self.image,
            "command": self.command,
            "gpu_type": [c.wire for c in run.candidates],
            "gpu_count": self.workload.gpu_count,
            "max_runtime_minutes": self.max_runtime_minutes,
            "env": run.env,
            "tags": self.tags(run, launcher_tag),
        }
        if self.capacity_wait_minutes is not None:
            spec["capacity_wait_minutes"] = self.capacity_wait_minutes
        if self.region:
            spec["region"] = self.region
        if self.template:
            spec["template"] = self.template
        return spec

    def config(self, run: RunPlan) -> dict[str, Any]:
        """config.json: the launch plan of one run (env names only, never values)."""
        return {
            "run_id": run.run_id,
            "workload": self.workload.name,
            "study": self.workload.study,
            "setups": self.setups or list(self.workload.setups),
            "smoke": self.smoke,
            "repeats": self.repeats,
            "via": self.via,
            "provider": self.provider,
            "launcher": self.launcher_name,
            "launcher_version": __version__,
            "gpus": [
                {"requested": c.requested, "gpu_type": c.gpu_type, "count": c.count, "usd_per_hour": c.price,
                 "usd_per_hour_by_region": {t.region: t.hourly_rate for t in reversed(c.rows)},
                 "instance_types": [t.id for t in c.rows]}
                for c in run.candidates
            ],
            "image": self.image,
            "command": self.command,
            "env_keys": sorted(run.env),
            "max_runtime_minutes": self.max_runtime_minutes,
            "max_cost_usd": self.max_cost,
            "max_minutes": self.max_minutes,
            "capacity_wait_minutes": self.capacity_wait_minutes,
            "region": self.region,
            "deployment_type": self.deployment,
            "template": self.template,
            "store": self.store_url,
            "price_override_usd_per_hour": self.price_override,
        }

    def expected_cost(self, run: RunPlan) -> float | None:
        """The expected run at the first candidate's cheapest region (or --price)."""
        price = self.price_override or (run.candidates[0].price if run.candidates else None)
        return None if price is None else price * self.workload.expected(self.smoke) / 60.0

    def worst_cost(self, run: RunPlan) -> float | None:
        """The safety net's whole runtime at the dearest rate any candidate has in any region."""
        prices = [c.dearest for c in run.candidates if c.dearest is not None]
        if not prices:
            return None
        return max(prices) * self.max_runtime_minutes / 60.0

    def pricing(self, run: RunPlan, gpu_type: str | None, region: str | None,
                cost_per_hour: float | None = None) -> dict[str, Any]:
        """How the run's cost metrics were priced, against the rate of the instance actually obtained.

        The job costs its output at the rate it was given (GPUBENCH_PRICE(S)_USD_PER_HOUR: the cheapest region);
        when it landed in a dearer region, every usd_per_* metric is low by `factor` (obtained / priced_at)."""
        priced_at = self.price_override
        if priced_at is None:
            choice = next((c for c in run.candidates if gpu_type and c.gpu_type.lower()
                           == gpu_type.split(":")[0].lower()), None)
            priced_at = choice.price if choice else run.price
        obtained = cost_per_hour or run.rate_obtained(gpu_type, region)
        facts: dict[str, Any] = {"gpu_type": gpu_type, "region": region, "priced_at_usd_per_hour": priced_at,
                                 "obtained_usd_per_hour": obtained, "factor": None}
        if self.price_override is not None:
            facts["note"] = "costs use --price as given"
        elif priced_at and obtained:
            facts["factor"] = round(obtained / priced_at, 6)
            facts["note"] = ("costs are at the obtained rate" if facts["factor"] == 1 else
                             f"usd_per_* metrics were priced at ${priced_at:g}/h; the instance cost ${obtained:g}/h"
                             f" in {region}: multiply them by {facts['factor']:g}")
        else:
            facts["note"] = "rate of the obtained instance unknown: costs are at the cheapest region's rate"
        return facts


def safety_net_minutes(spec: WorkloadSpec, max_minutes: float | None, override: int | None,
                       smoke: bool = False) -> int:
    """The job's max_runtime_minutes: always set. The workload's default, or the user's, and never
    far above --max-minutes, so a lost launcher still stops close to the user's limit."""
    minutes = override if override is not None else spec.safety_net_minutes(smoke)
    if max_minutes is not None:
        minutes = min(minutes, math.ceil(max_minutes) + 2)
    return max(1, min(10080, minutes))


def new_runs(spec: WorkloadSpec, gpus: list[GpuChoice], each: bool) -> list[RunPlan]:
    groups = [[g] for g in gpus] if each else [gpus]
    return [RunPlan(run_id=new_run_id(spec.name), candidates=group) for group in groups]
