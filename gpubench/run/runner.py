"""The local runner: every (setup group, repeat) of a workload in its own fresh worker process.

A group is one setup, or adjacent setups that share a session (workload.groups). Data flow: runner ->
worker (JSON job on stdin) -> records on the worker's stdout -> runner adds cost metrics -> RunDir
(stdout + results.jsonl); after each repeat, the workload's `derive` adds metrics across setups as
`derived` records. Worker stderr (library warnings, server logs, tracebacks) goes to run.log, and to our
stderr only when verbose: a person sees gpubench's own lines. A setup that fails or runs out of memory is a
result row; the other setups still run.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpubench import __version__, pricing
from gpubench.catalog import WorkloadSpec
from gpubench.measure import energy, flops
from gpubench.results import summary, verdict
from gpubench.run import environment, live, utilisation
from gpubench.run.stop_signal import stopped_from_outside
from gpubench.run.worker import HARNESS_METRICS, hand_over
from gpubench.schema import (
    NOT_FINITE,
    SCHEMA_VERSION,
    Derived,
    Metric,
    Progress,
    RunFinished,
    RunStarted,
    SetupResult,
    parse_record,
    split_finite,
    summarize_results,
)
from gpubench.stores import RunDir
from gpubench.workload import MetricDef, WorkloadDefinition, groups, load


@dataclass
class RunRequest:
    spec: WorkloadSpec
    setups: list[str]
    repeats: int
    smoke: bool
    run_id: str
    config: Any  # the workload module's Config instance (or a dict, stored as it is: stored_config)
    price_usd_per_hour: float | None = None
    weights: Literal["auto", "random"] = "auto"
    weight_paths: dict[str, str | None] = dataclasses.field(default_factory=dict)  # repo -> local folder
    # the version of each engine built from source the catalog entry names (spec.engines), found by the caller
    # (servers/engines.py): run/ does not import the servers
    engine_versions: dict[str, str | None] = dataclasses.field(default_factory=dict)


def energy_metrics(spec: WorkloadSpec, metrics: dict[str, Metric]) -> dict[str, Metric]:
    """Joules per unit of the study's energy basis (per image, per 1M tokens) from the average draw over the timed
    part: watts x 3600 are the joules of an hour, costed like an hourly price."""
    basis = spec.energy_basis
    if basis is None or basis.metric not in metrics or "avg_power_w" not in metrics:
        return {}
    joules = basis.per_unit(metrics[basis.metric].value, metrics["avg_power_w"].value * 3600.0)
    if joules is None:
        return {}
    return {name: definition.metric(joules) for name, definition in energy.per_unit_definitions(basis).items()}


def declared_metrics(workload: WorkloadDefinition) -> dict[str, MetricDef]:
    """Every metric a run of the workload may carry, each as declared once: the workload's METRICS, what the harness
    measures for every result (worker.HARNESS_METRICS), and what the runner makes of the catalog's cost and energy
    bases."""
    spec = workload.spec
    return {**HARNESS_METRICS, **pricing.cost_definitions(spec.cost), **energy.per_unit_definitions(spec.energy_basis),
            **workload.metrics}


def stored_config(config: Any) -> dict[str, Any]:
    """The run's config as config.json and run_started hold it: a workload's Config as its fields; a dict as it is
    (`gpubench loadgen`'s: its load with the latency target and the search's settings beside it)."""
    return dict(config) if isinstance(config, dict) else dataclasses.asdict(config)


def run_config(request: RunRequest, env: Any, argv: list[str], store_url: str | None) -> dict[str, Any]:
    """Everything needed to explain (and repeat) a run; saved as config.json next to the results."""
    return {
        "schema_version": SCHEMA_VERSION,
        "gpubench_version": __version__,
        "run_id": request.run_id,
        "workload": request.spec.name,
        "study": request.spec.study,
        "setups": request.setups,
        "repeats": request.repeats,
        "smoke": request.smoke,
        "weights": request.weights,
        "weight_paths": request.weight_paths,
        "price_usd_per_hour": request.price_usd_per_hour,
        "config": stored_config(request.config),
        "environment": env.model_dump(),
        "command": argv,
        "store": store_url,
    }


# How a setup is measured in this process, not in a worker (`gpubench loadgen`: its load is the setup, its server
# is elsewhere): measure(setup, repeat, progress, say) -> the setup's result, progress taking Progress's fields and
# say a line for a person (printed and kept in run.log, as the runner's own lines are).
InProcess = Callable[[str, int, Callable[..., None], Callable[[str], None]], SetupResult]


class Runner:
    """A run's lifecycle: config.json and run_started, each (setup group, repeat) measured and its result costed,
    judged and recorded, derived metrics, run_finished and the summary. A workload's setups run in worker processes;
    `measure` (with the `definition` of a workload the catalog does not list) runs each setup here instead."""

    def __init__(self, request: RunRequest, run_dir: RunDir, echo=None, verbose: bool = False,
                 measure: InProcess | None = None, definition: WorkloadDefinition | None = None):
        self.request = request
        self.run_dir = run_dir
        self.verbose = verbose
        self._print = echo or (lambda text: print(text, file=sys.stderr, flush=True))
        self.results: list[SetupResult] = []
        self._measure = measure
        self.workload = definition or load(request.spec)

    def run(self, argv: list[str], store_url: str | None = None) -> RunFinished:
        req = self.request
        env = environment.collect(req.spec.dependencies, engines=req.engine_versions)
        self.run_dir.write_config(run_config(req, env, argv, store_url))
        config = stored_config(req.config)
        self.run_dir.record(RunStarted(
            run_id=req.run_id, workload=req.spec.name, study=req.spec.study, setups=req.setups,
            repeats=req.repeats, smoke=req.smoke, config=config, environment=env,
            price_usd_per_hour=req.price_usd_per_hour,
        ))
        started = time.perf_counter()
        total = len(req.setups) * req.repeats
        workload = self.workload
        status = None
        try:
            for repeat in range(1, req.repeats + 1):
                for group in groups(workload, req.setups, req.config):
                    done = len(self.results)
                    self.run_dir.record(Progress(run_id=req.run_id, phase="setup", setup=group[0], repeat=repeat,
                                                 done=done, total=total))
                    self._echo(f"[{done + 1}/{total}] {req.spec.name} {', '.join(group)} (repeat {repeat})")
                    self._run_group(group, repeat, config)
                self._derive(workload, repeat)
        except KeyboardInterrupt:
            status = "interrupted"
        if not self.verbose and any(r.status in ("error", "oom") for r in self.results):
            self._echo("the failed setups' tracebacks and the libraries' output are in run.log (--verbose shows them)")
        finished = RunFinished(
            run_id=req.run_id, status=status or overall_status(self.results), duration_s=round(
                time.perf_counter() - started, 3), summary=summarize_results(req.setups, self.results),
        )
        self.run_dir.record(finished)
        self._write_summary(workload, finished)
        return finished

    def _write_summary(self, workload: WorkloadDefinition, finished: RunFinished) -> None:
        """summary.md and summary.csv in the run folder; the table on stderr for the person watching."""
        req = self.request
        energies = summary.energy_per_setup(self.results)
        unmeasured = summary.energy_note(energies)
        header, rows = summary.table(req.spec, workload, finished.summary, verdict.per_setup(self.results),
                                     None if unmeasured else energies)
        notes = summary.notes(req.smoke, bool(req.price_usd_per_hour), finished.summary) + (
            [unmeasured] if unmeasured else [])
        text = summary.markdown(header, rows, notes)
        bases = "".join(f"- {r.setup} (repeat {r.repeat}): {r.verdict.label}: {r.verdict.basis}\n"
                        for r in self.results if r.status == "ok" and r.verdict is not None)
        why = f"What bounded each result (gpubench/results/verdict.py):\n\n{bases}\n" if bases else ""
        for note in workload.notes(req.config):  # e.g. the latency target used
            why += f"> {note}\n\n"
        (self.run_dir.path / "summary.md").write_text(f"# {req.spec.name}: {req.run_id}\n\n{why}{text}")
        (self.run_dir.path / "summary.csv").write_text(summary.full_csv(finished.summary))
        width = live.terminal_width()  # a person at a terminal gets the table fitted to it; a log, the markdown
        shown = summary.fitted(header, rows, notes, width) if width else text
        self._print(f"{why}{shown}".rstrip("\n"))

    def _echo(self, text: str) -> None:
        """What a person reads: printed to stderr and kept in run.log."""
        self._print(text)
        self.run_dir.log(text)

    def _run_group(self, setups: list[str], repeat: int, config: dict[str, Any]) -> None:
        """One worker for the group; each setup's result is recorded as soon as it arrives."""
        req = self.request
        if self._measure is not None:
            for setup in setups:
                def progress(phase, done=None, total=None, message=None, setup=setup):
                    self.run_dir.record(Progress(run_id=req.run_id, phase=phase, setup=setup, repeat=repeat,
                                                 done=done, total=total, message=message))

                self._finish(self._costed(self._measure(setup, repeat, progress, self._echo)))
            return
        job = {"workload": req.spec.name, "setups": setups, "repeat": repeat, "run_id": req.run_id,
               "config": config, "smoke": req.smoke, "weights": req.weights, "weight_paths": req.weight_paths}
        label = setups[0] if len(setups) == 1 else f"{setups[0]}..{setups[-1]}"
        # -P: never import from the working directory, which may hold a source tree of gpubench
        # whose folders are not laid out as the installed package is (workloads/ -> gpubench.workloads).
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "gpubench.run.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        stderr_tail: list[str] = []
        relay = threading.Thread(target=self._relay_stderr, args=(proc.stderr, label, stderr_tail), daemon=True)
        relay.start()
        results: dict[str, SetupResult] = {}
        try:
            hand_over(proc, job)
            for line in proc.stdout:
                record = parse_record(line)
                if isinstance(record, Progress):
                    self.run_dir.record(record)
                elif isinstance(record, SetupResult):
                    results[record.setup] = self._finish(self._costed(record))
                elif line.strip():
                    self.run_dir.log(f"[{label}] {line.rstrip()}")
            proc.wait()
            if stopped_from_outside(proc.returncode):
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
        finally:
            relay.join(timeout=5)
        reason = stderr_tail[-1] if stderr_tail else "no output"
        for setup in setups:
            if setup not in results:
                self._finish(SetupResult(
                    run_id=req.run_id, setup=setup, repeat=repeat, status="error",
                    error=f"worker exited with code {proc.returncode} before reporting: {reason}"[:500]))

    def _finish(self, result: SetupResult) -> SetupResult:
        self.results.append(result)
        self.run_dir.record(result)
        self._echo(describe(result))
        if result.info.get(NOT_FINITE):
            self._echo(f"  {result.setup}: {_left_out(result.info[NOT_FINITE])}")
        return result

    def _costed(self, result: SetupResult) -> SetupResult:
        """An ok result with what the runner adds: cost per unit at the run's price, energy per unit, and achieved
        FLOP/s as a share of the device's datasheet peak."""
        price = self.request.price_usd_per_hour
        if result.status == "ok" and price:
            result.metrics.update(pricing.cost_metrics(self.request.spec.cost, result.metrics, price,
                                                       self.workload.metrics))
        if result.status == "ok":
            result.metrics.update(energy_metrics(self.request.spec, result.metrics))
            share = flops.peak_share(result.metrics, result.device_name, result.dtype)
            if share is not None:
                result.metrics[flops.PEAK_METRIC] = share
            bandwidth = flops.bandwidth_share(result.metrics, result.device_name)
            if bandwidth is not None:
                result.metrics[flops.BANDWIDTH_PEAK_METRIC] = bandwidth
            result.verdict = judged(result).facts()
        return result

    def _derive(self, workload: WorkloadDefinition, repeat: int) -> None:
        """The workload's metrics across setups for this repeat, recorded and merged into its results."""
        if workload.derive is None:
            return
        ok = {r.setup: r for r in self.results if r.repeat == repeat and r.status == "ok"}
        if not ok:
            return
        for setup, values in workload.derive(self.request.config, list(ok.values())).items():
            if setup not in ok or not values:
                continue
            values, not_finite = split_finite(values)
            if not_finite:
                self._echo(f"  {setup}: derived, {_left_out(not_finite)}")
            if not values:
                continue
            metrics = {name: workload.metrics[name].metric(value) for name, value in values.items()}
            ok[setup].metrics.update(metrics)
            self.run_dir.record(Derived(run_id=self.request.run_id, setup=setup, repeat=repeat, metrics=metrics))
            self._echo(f"  {setup}: " + ", ".join(f"{k}={_fmt(m.value)} {m.unit}" for k, m in metrics.items()))

    def _relay_stderr(self, stream, setup: str, tail: list[str]) -> None:
        for line in stream:
            line = line.rstrip("\n")
            self.run_dir.log(f"[{setup}] {line}")
            if self.verbose:
                sys.stderr.write(line + "\n")  # one write: an unbuffered stderr must not split the line from its end
                sys.stderr.flush()
            if line.strip():
                tail.append(line.strip())
                del tail[:-20]


def judged(result: SetupResult) -> verdict.Verdict:
    """What bounded an ok result, from its metrics and the core count its sampler saw."""
    values = {name: m.value for name, m in result.metrics.items()}
    cores = result.utilisation.cores if result.utilisation else None
    if cores:
        values["cores"] = float(cores)
    values["on_gpu"] = float(bool(result.device and result.device.startswith("cuda")))
    return verdict.judge(values)


def overall_status(results: list[SetupResult]) -> str:
    """ok when every setup that could run here did; a skipped setup (no hub, too few GPUs) is no failure."""
    ok = sum(r.status == "ok" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    if ok and ok + skipped == len(results):
        return "ok"
    return "partial" if ok else "failed"


def describe(result: SetupResult) -> str:
    if result.status != "ok":
        return f"  {result.setup}: {result.status.upper()} {result.error or ''}".rstrip()
    own = [(k, m) for k, m in result.metrics.items() if k not in utilisation.METRICS]  # the machine's: in the table
    shown = ", ".join(f"{k}={_fmt(m.value)} {m.unit}" for k, m in own[:6])
    return f"  {result.setup}: ok  {shown}"


def _left_out(not_finite: dict[str, str]) -> str:
    return "not finite, left out: " + ", ".join(f"{name}={value}" for name, value in not_finite.items())


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
