"""SYNTHETIC run folders in the result schema, for timing and testing `gpubench site`; never benchmark results.

Every run says what it is: platform and launcher "synthetic", config key `synthetic: true`. Numbers are made
up (a base per metric, a factor per GPU, about 1% noise per repeat); progress lines are written as a real run
writes them, so reading a run costs what it costs. Keep the output out of benchmarks/results.

    python tools/synthetic_runs.py /tmp/store --runs 1000
"""

from __future__ import annotations

import argparse
import hashlib
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpubench.catalog import WORKLOADS
from gpubench.run.runner import declared_metrics
from gpubench.schema import (
    Environment,
    GpuInfo,
    Metric,
    Progress,
    RunFinished,
    RunStarted,
    SetupResult,
    summarize_results,
    to_line,
)
from gpubench.workload import load

GPUS = (("NVIDIA H200", 3.5), ("NVIDIA H100 80GB HBM3", 2.5), ("NVIDIA L40S", 0.86))  # (name, synthetic $/h)
START = datetime(2026, 6, 1, tzinfo=UTC)


def write_run(folder: Path, workload: str, gpu: str, price: float | None, when: datetime,
              values: dict[str, list[dict[str, float]]], progress: int = 10, smoke: bool = False,
              info: dict[str, dict] | None = None) -> Path:
    """One synthetic run folder; values: {setup: [{metric: value} per repeat]}, units as the workload declares;
    info: {setup: the info of each of its results} (a verdict, say)."""
    spec = WORKLOADS.get(workload)
    declared = declared_metrics(load(spec))
    run_id = f"{workload}-{when:%Y%m%dT%H%M%SZ}-{hashlib.sha256(str(folder).encode()).hexdigest()[:6]}"
    env = Environment(python="3.12", platform="synthetic", launcher="synthetic", gpus=[GpuInfo(name=gpu)],
                      gpu_count=1)
    ts = when.strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    records = [RunStarted(run_id=run_id, ts=ts, workload=workload, study=spec.study, setups=list(values),
                          repeats=max(len(v) for v in values.values()), smoke=smoke,
                          config={"synthetic": True}, environment=env, price_usd_per_hour=price)]
    results = []
    for setup, repeats in values.items():
        for repeat, metrics in enumerate(repeats, 1):
            records += [Progress(run_id=run_id, ts=ts, phase="timed", setup=setup, repeat=repeat, done=i,
                                 total=progress) for i in range(progress)]
            result = SetupResult(run_id=run_id, ts=ts, setup=setup, repeat=repeat, status="ok",
                                 info=dict((info or {}).get(setup, {})), metrics={
                name: declared[name].metric(value) if name in declared else Metric(value=value, unit="")
                for name, value in metrics.items()})
            results.append(result)
            records.append(result)
    records.append(RunFinished(run_id=run_id, ts=ts, status="ok", duration_s=1.0,
                               summary=summarize_results(list(values), results)))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text("".join(to_line(r) + "\n" for r in records))
    return folder


def generate(root: Path, runs: int, seed: int = 0, start: int = 0) -> list[Path]:
    """`runs` runs spread over the studies and GPUs, one a day per study and GPU, numbers drifting a little."""
    rng = random.Random(seed)
    names = [spec.name for spec in WORKLOADS]
    folders = []
    for i in range(start, start + runs):
        workload = names[i % len(names)]
        gpu, price = GPUS[(i // len(names)) % len(GPUS)]
        spec = WORKLOADS.get(workload)
        metrics = list(load(spec).metrics)[:6]
        when = START + timedelta(hours=i)
        factor = 1 + 0.3 * [g for g, _ in GPUS].index(gpu)
        values = {setup: [{m: 100 * factor * (1 + j) * (1 + k / 7) * rng.gauss(1, 0.01) for k, m in enumerate(metrics)}
                          for _ in range(3)] for j, setup in enumerate(spec.setups[:6])}
        folders.append(write_run(root / f"synthetic-{i:05d}", workload, gpu, price, when, values))
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    generate(args.root, args.runs, args.seed)
    print(f"wrote {args.runs} synthetic runs under {args.root}")


if __name__ == "__main__":
    main()
