"""One setup, one repeat, in a fresh process: `python -m gpubench.worker` with a JSON job on stdin.

The worker writes records (progress, then exactly one result) as JSON Lines to the stdout it was
given, and moves everything else a library might print to stderr, so its stdout stays parseable.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from gpubench.catalog import WORKLOADS
from gpubench.schema import Metric, Progress, SetupResult, to_line
from gpubench.workload import SetupContext, load_module

# CUDA's and the CPU allocator's ways of saying the setup did not fit.
OOM_MARKERS = ("out of memory", "cublas_status_alloc_failed", "outofmemoryerror", "can't allocate memory")


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


def detect_device() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return f"cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}"
    except ImportError:
        pass
    return "cpu"


def main() -> int:
    job = json.loads(sys.stdin.read())
    records = _private_stdout()
    spec = WORKLOADS.get(job["workload"])
    run_id, setup, repeat = job["run_id"], job["setup"], job["repeat"]

    def emit(record) -> None:
        records.write(to_line(record) + "\n")

    def progress(phase: str, done: int | None = None, total: int | None = None, message: str | None = None):
        emit(Progress(run_id=run_id, phase=phase, setup=setup, repeat=repeat, done=done, total=total, message=message))

    started = time.perf_counter()
    try:
        module = load_module(spec)
        config = module.Config(**job["config"])
        ctx = SetupContext(run_id=run_id, setup=setup, repeat=repeat, smoke=job["smoke"], weights=job["weights"],
                           progress=progress, weight_paths=job.get("weight_paths", {}))
        values = module.run_setup(setup, config, ctx)
        metrics = {}
        for name, value in values.items():
            definition = module.METRICS[name]  # an undeclared metric is a bug in the workload
            metrics[name] = Metric(value=float(value), unit=definition.unit, better=definition.better)
        result = SetupResult(run_id=run_id, setup=setup, repeat=repeat, status="ok", metrics=metrics)
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a result row, never a lost run
        if isinstance(exc, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        status = "oom" if is_oom(exc) else "error"
        result = SetupResult(run_id=run_id, setup=setup, repeat=repeat, status=status, error=one_line(exc))
    result.device = detect_device() if "torch" in sys.modules else None  # failed before choosing one
    result.duration_s = round(time.perf_counter() - started, 3)
    emit(result)
    records.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
