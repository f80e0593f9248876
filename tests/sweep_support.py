"""Shared helpers for the sweep tests (no tests here): a plan file, `gpubench-launch sweep` in this process,
and what the fake and the S3 store hold afterwards."""

from __future__ import annotations

import json
from pathlib import Path

from test_launch_support import launch

# An API minute of 3 s: a real `gpubench run ... --smoke` (10-60 s on two busy cores) ends well inside the
# plans' 60-minute safety net, and a GPU with no capacity fails after its 1-minute wait (3 s).
SLOW = [{"minute_s": 3.0}]
TRAIN = ["--smoke", "--setups", "eager-sdpa"]
EMBED = ["--smoke", "--setups", "bge-small-128", "--weights", "random"]


def plan_text(cells: list[tuple[str, list[str], list[str]]], max_usd: float | str | None = 20.0,
              extra: str = "capacity_wait_minutes = 1\nmax_runtime_minutes = 60\n") -> str:
    lines = [] if max_usd is None else [f"max_usd = {max_usd}"]
    lines.append(extra)
    for workload, gpus, args in cells:
        lines += ["[[cell]]", f"workload = {json.dumps(workload)}", f"gpus = {json.dumps(gpus)}",
                  f"args = {json.dumps(args)}"]
    return "\n".join(lines) + "\n"


def write_plan(folder: Path, text: str, name: str = "plan.toml") -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def sweep(capsys, plan: str, *args: str):
    return launch(capsys, "sweep", plan, *args)


def submits(fake) -> list[dict]:
    return [json.loads(r.body) for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]


def stored_runs(s3, bucket: str, prefix: str) -> dict[str, dict[str, str]]:
    """{'<cell folder>/<run id>': {file name: text}} for every run folder under the prefix."""
    client = s3.client()
    runs: dict[str, dict[str, str]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for item in page.get("Contents", []):
            folder, _, name = item["Key"][len(prefix) + 1:].rpartition("/")
            if folder.count("/") == 4:  # <sweep>/<workload>/<gpu>/<args key>/<run id>
                body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read().decode()
                runs.setdefault(folder, {})[name] = body
    return runs


def finished(files: dict[str, str]) -> str | None:
    """The run_finished status of a stored run folder."""
    for line in files.get("results.jsonl", "").splitlines():
        record = json.loads(line)
        if record["kind"] == "run_finished":
            return record["status"]
    return None


def summary_object(s3, bucket: str, key: str) -> dict:
    return json.loads(s3.client().get_object(Bucket=bucket, Key=key)["Body"].read())


def live_jobs(fake) -> list:
    return [j for j in fake.jobs.values() if j.status in ("queued", "starting", "running")]
