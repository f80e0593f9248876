"""The launch-to-first-matmul study (shared/seeds: "How long until a rented GPU runs CUDA?").

Per GPU type: one container instance (from /instances/types, deployment_type container by
default), timed from the create call's return to API running, to the first SSH, and to the first
CUDA matmul (the in-container `gpubench run first-matmul` step: import torch, CUDA context, a
4096x4096 matmul; its ok result record arriving at the launcher marks the time, so it includes
reading the output over SSH). On a stock template (no --template) the launch script first installs
uv, torch and gpubench (launcher/runcrate/bootstrap.py): that is inside "first CUDA op", as in the study, and
each step is also its own `bootstrap_<step>_s` metric. The failures met on
the way (4xx/5xx on create, 429s) are counted. All of it becomes one result record, setup
"launch", next to the container's own records, so it is stored and summarized like any benchmark.
"""

from __future__ import annotations

from pathlib import Path

from gpubench.schema import Metric, SetupResult, parse_record

from .bootstrap import bootstrap_phases

SETUP = "launch"


def launch_record(run, error: str | None = None) -> SetupResult:
    """`run` is a finished InstanceRun."""
    times = run.times
    metrics: dict[str, Metric] = {}
    names = {
        "create_call_s": "create_call_s",
        "api_running_s": "create_to_running_s",
        "first_ssh_s": "create_to_ssh_s",
        "first_result_s": "create_to_matmul_s",
    }
    for key, metric in names.items():
        if times.get(key) is not None:
            metrics[metric] = Metric(value=times[key], unit="s", better="lower")
    calls = run.calls
    metrics["create_failures_4xx"] = Metric(
        value=sum(1 for f in calls.failures if f["call"] == "instances.create" and f["status"]
                  and 400 <= f["status"] < 500 and f["status"] != 429), unit="count", better="lower")
    metrics["create_failures_5xx"] = Metric(
        value=sum(1 for f in calls.failures if f["call"] == "instances.create" and f["status"]
                  and f["status"] >= 500), unit="count", better="lower")
    metrics["rate_limited_429"] = Metric(value=calls.count(429), unit="count", better="lower")
    for name, seconds in bootstrap_phases(_records(run)).items():
        metrics[name] = Metric(value=seconds, unit="s", better="lower")
    if run.row is not None:
        metrics["usd_per_hour"] = Metric(value=run.row.hourly_rate, unit="USD/h", better="lower")
    cost = run.cost_estimate()
    if cost is not None and run.row is not None:
        metrics["cost_usd"] = Metric(value=cost, unit="USD", better="lower")
    complete = all(times.get(k) is not None for k in names if k != "create_call_s")
    if error is None and not complete:
        missing = [names[k] for k in names if k != "create_call_s" and times.get(k) is None]
        error = f"not measured: {', '.join(missing)}" + (f" ({run.lost})" if run.lost else "")
    # the offer rented goes in info: `device` is where a setup's compute ran ("cuda:0"), and this one ran none
    info = {}
    if run.row is not None:
        info["offer"] = {"gpu_type": run.row.gpu_type, "deployment_type": run.row.deployment_type,
                         "region": run.row.region}
    return SetupResult(
        run_id=run.run_id, setup=SETUP, repeat=0, status="ok" if error is None else "error",
        metrics=metrics, error=error, duration_s=times.get("first_result_s"), info=info,
    )


def _records(run) -> list:
    """The records the run's folder holds so far (the bootstrap's phases are among them)."""
    path = Path(run.launch.plan.results_dir) / run.run_id / "results.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            record = parse_record(line)
        except ValueError:
            continue
        if record is not None:
            records.append(record)
    return records
