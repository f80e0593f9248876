"""A group of setups, one repeat, in a fresh process: `python -m gpubench.run.worker` with a JSON job on stdin.

The group is one setup, or adjacent setups sharing one session (workload.groups). The worker writes
records (progress, then exactly one result per setup) as JSON Lines to the stdout it was given, and
moves everything else a library might print to stderr, so its stdout stays parseable.

A setup that asks for N processes (workload.processes) is run by N rank processes started here with
torchrun's rendezvous variables (`python -m gpubench.run.worker --rank R`, the same job on stdin): rank 0
writes the records, the others' stdout goes to stderr, and if any rank fails the rest are stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from gpubench.catalog import WORKLOADS
from gpubench.measure import gpu_memory
from gpubench.measure.energy import METRICS as ENERGY_METRICS
from gpubench.ports import free_port
from gpubench.run import ran_with, utilisation
from gpubench.schema import (
    NOT_FINITE,
    EnergyFacts,
    Progress,
    SetupResult,
    UtilisationFacts,
    parse_record,
    split_finite,
    to_line,
)
from gpubench.workload import SetupContext, SetupSkipped, WorkloadDefinition, load

# CUDA's and the CPU allocator's ways of saying the setup did not fit.
OOM_MARKERS = ("out of memory", "cublas_status_alloc_failed", "outofmemoryerror", "can't allocate memory")
EXIT_RANK_FAILED, EXIT_RANK_OOM = 1, 3  # how a rank other than 0 says its setup failed


def is_oom(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "OutOfMemoryError" in names or isinstance(exc, MemoryError):
        return True
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(marker in text for marker in OOM_MARKERS)


def one_line(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:500].rstrip(": ")


def _private_stdout():
    """Keep the real stdout for records; point fd 1 (and sys.stdout) at stderr for everything else."""
    records = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return records


def failure(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, SetupSkipped):
        return "skipped", str(exc)[:500]
    traceback.print_exc(file=sys.stderr)
    return ("oom" if is_oom(exc) else "error"), one_line(exc)


@dataclass
class Machine:
    """What the harness measured around one setup: the utilisation (and energy) metrics, what they cover (or why
    there are none) and where the energy came from."""

    metrics: dict[str, float] = field(default_factory=dict)
    utilisation: UtilisationFacts | None = None
    energy: EnergyFacts | None = None


class Worker:
    def __init__(self, job: dict, records, rank: int = 0, world_size: int = 1):
        self.job, self.records, self.rank, self.world_size = job, records, rank, world_size
        self.run_id, self.repeat = job["run_id"], job["repeat"]
        self.results: list[SetupResult] = []

    def emit(self, record) -> None:
        if isinstance(record, SetupResult):
            self.results.append(record)
        if self.rank == 0:  # the other ranks of a multi-process setup only compute
            self.records.write(to_line(record) + "\n")

    def context(self, setup: str, sampler: utilisation.Sampler | None = None, timed_phases: tuple[str, ...] = (),
                no_readings: str | None = None) -> SetupContext:
        """The setup's context; its memory tracker reads NVML from `sampler`, the process's one NVML sampler
        (`no_readings`: why there is none)."""
        def progress(phase, done=None, total=None, message=None):
            if sampler is not None:
                sampler.mark(phase in timed_phases)
            self.emit(Progress(run_id=self.run_id, phase=phase, setup=setup, repeat=self.repeat, done=done,
                               total=total, message=message))

        job = self.job
        ctx = SetupContext(run_id=self.run_id, setup=setup, repeat=self.repeat, smoke=job["smoke"],
                           weights=job["weights"], progress=progress, weight_paths=job.get("weight_paths", {}),
                           rank=self.rank, world_size=self.world_size)
        ctx.memory = gpu_memory.MemoryTracker(ctx.info, sampler, no_readings)
        return ctx

    def result(self, setup: str, workload: WorkloadDefinition | None, started: float, values=None, exc=None, extra=None,
               machine: Machine | None = None, config=None) -> SetupResult:
        """machine: what the harness measured (its metrics after the workload's own); config: the workload's, for
        the device and dtype the setup ran with (None when it could not be built)."""
        machine = machine or Machine()
        not_finite: dict[str, str] = {}
        if exc is None:
            metrics = {}
            finite, not_finite = split_finite({**(extra.metrics if extra else {}), **values, **machine.metrics})
            for name, value in finite.items():
                definition = metric_definition(workload, name)
                metrics[name] = definition.metric(value)
            result = SetupResult(run_id=self.run_id, setup=setup, repeat=self.repeat, status="ok", metrics=metrics)
        else:
            status, error = failure(exc)
            result = SetupResult(run_id=self.run_id, setup=setup, repeat=self.repeat, status=status, error=error)
        result.info = dict(extra.info) if extra else {}
        if not_finite:
            result.info[NOT_FINITE] = not_finite
        result.device, result.device_name = ran_with.device(config)
        result.dtype = ran_with.dtype(config, extra.dtype if extra else None)
        result.utilisation = machine.utilisation
        if result.status == "ok" and machine.energy is not None:
            on_cpu = (result.device or "").startswith("cpu")
            result.energy = EnergyFacts(absent="ran on the CPU (cpu): no GPU energy") if on_cpu else machine.energy
            if on_cpu:
                for name in ENERGY_METRICS:
                    result.metrics.pop(name, None)
        result.duration_s = round(time.perf_counter() - started, 3)
        return result

    def run_group(self) -> None:
        """Every setup of the group once; a session, when the workload has one, opened around them all."""
        setups = self.job["setups"]
        started = time.perf_counter()
        session_ctx = config = None
        try:
            workload = load(WORKLOADS.get(self.job["workload"]))
            config = workload.config(**self.job["config"])
            with contextlib.ExitStack() as stack:
                sampling = self._sampling(stack)
                timed_phases = workload.timed_phases or utilisation.DEFAULT_TIMED_PHASES
                session = None
                if workload.open_session is not None:
                    session_ctx = self.context(setups[0])
                    session = stack.enter_context(
                        workload.open_session(workload.session_key(setups[0], config), config, session_ctx))
                for index, setup in enumerate(setups):
                    sampler = utilisation.Sampler(sampling[0], gpus_used=self.world_size).start() if sampling else None
                    ctx = self.context(setup, sampler, timed_phases, self._no_readings(sampling))
                    ctx.session = session
                    begun = time.perf_counter() if index else started
                    machine = Machine()
                    try:
                        try:
                            values = workload.run_setup(setup, config, ctx)
                        finally:
                            machine = self._utilisation(sampler, sampling)
                        if index == 0 and session_ctx is not None:  # the session's own numbers, once
                            ctx.metrics = {**session_ctx.metrics, **ctx.metrics}
                            ctx.info = {**session_ctx.info, **ctx.info}
                        result = self.result(setup, workload, begun, values, extra=ctx, machine=machine, config=config)
                    except KeyboardInterrupt:
                        raise
                    except BaseException as exc:  # noqa: BLE001 - a failed setup is a result row
                        result = self.result(setup, workload, begun, exc=exc, extra=ctx, machine=machine,
                                             config=config)
                    self.emit(result)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the module, config or session failed: every setup says so
            reported = {record.setup for record in self.results}
            for setup in setups:
                if setup not in reported:
                    self.emit(self.result(setup, None, started, exc=exc, extra=session_ctx, config=config))

    def _sampling(self, stack: contextlib.ExitStack) -> tuple[utilisation.Nvml | None, str | None] | None:
        """(NVML or None, why not) when this worker samples utilisation; None when it does not (switched
        off, or a rank other than 0, whose setup rank 0 reports)."""
        if self.rank != 0 or not utilisation.enabled():
            return None
        nvml, why = utilisation.open_nvml()
        if nvml is not None:
            stack.callback(nvml.close)
        return nvml, why

    def _no_readings(self, sampling: tuple[utilisation.Nvml | None, str | None] | None) -> str | None:
        """Why this setup has no NVML readings (for NVML's peak memory), or None when it has them."""
        if sampling is None:
            if self.rank != 0:
                return f"rank {self.rank} does not sample; rank 0 reports the setup"
            return f"not sampled ({utilisation.OFF_VARIABLE}={os.environ.get(utilisation.OFF_VARIABLE)})"
        return sampling[1]

    def _utilisation(self, sampler, sampling) -> Machine:
        """The setup's utilisation and energy metrics, what they cover and where its energy came from (or why there
        are none); nothing for a rank other than 0, whose setup rank 0 reports."""
        if sampler is None:
            if self.rank != 0:
                return Machine()
            switch = f"{utilisation.OFF_VARIABLE}={os.environ.get(utilisation.OFF_VARIABLE)}"
            return Machine(utilisation=UtilisationFacts(not_sampled=switch),
                           energy=EnergyFacts(absent=f"not sampled ({switch})"))
        figures = sampler.stop()
        figures.facts.no_gpu_figures = sampling[1]
        found = figures.energy
        absent = f"no GPU readings (NVML: {sampling[1]})" if sampling[1] else found.absent
        energy = EnergyFacts(absent=absent) if found.joules is None else EnergyFacts(
            source=found.source, gpus=found.gpus, seconds=round(found.seconds, 3),
            power_integral_j=None if found.power_integral_j is None else round(found.power_integral_j, 3))
        return Machine(metrics=figures.metrics, utilisation=figures.facts, energy=energy)


HARNESS_METRICS = {**utilisation.METRICS, **gpu_memory.METRICS}  # what the harness measures for every workload


def metric_definition(workload: WorkloadDefinition | None, name: str):
    """A metric's unit and direction: the workload's METRICS, else the figures the harness measures for every
    result (utilisation, energy, peak memory). A metric declared in neither is a bug in the workload (KeyError)."""
    if workload is not None and name in workload.metrics:
        return workload.metrics[name]
    return HARNESS_METRICS[name]



def run_ranks(job: dict, records, world_size: int) -> None:
    """One setup as `world_size` rank processes; rank 0's records are relayed, any rank's failure ends all."""
    setup = job["setups"][0]
    started = time.perf_counter()
    rendezvous = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                  "WORLD_SIZE": str(world_size), "LOCAL_WORLD_SIZE": str(world_size)}
    ranks = []
    for rank in range(world_size):
        env = {**os.environ, **rendezvous, "RANK": str(rank), "LOCAL_RANK": str(rank)}
        proc = subprocess.Popen([sys.executable, "-P", "-m", "gpubench.run.worker", "--rank", str(rank)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE if rank == 0 else sys.stderr,
                                env=env, text=True)
        hand_over(proc, job)
        ranks.append(proc)
    result: list[SetupResult] = []

    def relay() -> None:
        for line in ranks[0].stdout:
            record = parse_record(line)
            if isinstance(record, SetupResult):
                result.append(record)
            if record is not None:
                records.write(line if line.endswith("\n") else line + "\n")

    reader = threading.Thread(target=relay, daemon=True)
    reader.start()
    try:
        failed = _wait_all(ranks)
    except KeyboardInterrupt:
        _stop(ranks)
        raise
    reader.join(timeout=10)
    if not result:
        why = f"rank {failed[0]} failed (exit code {failed[1]}); see its log" if failed else "rank 0 reported nothing"
        status = "oom" if failed and failed[1] == EXIT_RANK_OOM else "error"
        records.write(to_line(SetupResult(
            run_id=job["run_id"], setup=setup, repeat=job["repeat"], status=status, error=why,
            duration_s=round(time.perf_counter() - started, 3))) + "\n")


def hand_over(proc: subprocess.Popen, job: dict) -> None:
    """The job on a worker's stdin. A worker already gone (stopped, or killed as it started) closed the pipe: its
    exit code, read after, says what happened, rather than a BrokenPipeError ending the caller."""
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(json.dumps(job))
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()


def _wait_all(ranks: list[subprocess.Popen]) -> tuple[int, int] | None:
    """Wait for every rank; the first that fails stops the others (they would wait in a collective forever)."""
    while True:
        codes = [proc.poll() for proc in ranks]
        bad = next(((rank, code) for rank, code in enumerate(codes) if code not in (None, 0)), None)
        if bad:
            _stop(ranks)
            return bad
        if all(code == 0 for code in codes):
            return None
        time.sleep(0.2)


def _stop(ranks: list[subprocess.Popen]) -> None:
    for proc in ranks:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + 10
    for proc in ranks:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(sys.stdin.read())
    records = _private_stdout()
    if argv[:1] == ["--rank"]:  # one rank of a multi-process setup, started by run_ranks
        rank = int(os.environ["RANK"])
        worker = Worker(job, records, rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
        worker.run_group()
        records.flush()
        statuses = {r.status for r in worker.results}
        if rank == 0 or not statuses & {"oom", "error"}:
            return 0  # rank 0 reports for all; a skip is every rank's same verdict
        return EXIT_RANK_OOM if "oom" in statuses else EXIT_RANK_FAILED
    world_size = _world_size(job)
    if world_size > 1:
        run_ranks(job, records, world_size)
    else:
        Worker(job, records).run_group()
    records.flush()
    return 0


def _world_size(job: dict) -> int:
    """How many processes the job's setup asks for; 1 when it is a group or the module cannot say."""
    if len(job["setups"]) != 1:
        return 1
    try:
        workload = load(WORKLOADS.get(job["workload"]))
        return workload.processes_for(job["setups"][0], workload.config(**job["config"]))
    except Exception:  # noqa: BLE001 - run_group reports the same failure as a result row
        return 1


if __name__ == "__main__":
    sys.exit(main())
