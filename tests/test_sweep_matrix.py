"""2 workloads x 3 GPU types against the fake Runcrate and SeaweedFS, one type without capacity: every
available cell stored once under the sweep's prefix, the missing one reported live, in the summary table
and in the store's summary object; the same call again launches nothing."""

from __future__ import annotations

import json
import re

import pytest
import test_launch_support as support
from clirun import gpubench
from sweep_support import (
    EMBED,
    SLOW,
    TRAIN,
    finished,
    live_jobs,
    plan_text,
    stored_runs,
    submits,
    summary_object,
    sweep,
    write_plan,
)
from test_launch_support import API_KEY, secret_texts

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env
GPUS = ["A4000", "L40S", "RTX5090"]


@pytest.mark.parametrize("fake", SLOW, indirect=True)
def test_two_workloads_three_gpus_one_unavailable(fake, launcher_env, s3, s3_bucket, s3_env, capsys, tmp_path):
    fake.set_capacity("A4000", False)
    plan = write_plan(tmp_path, plan_text([("train-compile", GPUS, TRAIN), ("embed", GPUS, EMBED)]), "weekly.toml")
    store = f"s3://{s3_bucket}/sweeps"

    first = sweep(capsys, plan, "--store", store)
    assert first.code == exit_codes.JOB_NOT_SUCCEEDED, first.stderr  # a cell is missing: not all ok

    sent = submits(fake)
    assert sorted((s["command"].split()[2], s["gpu_type"][0]) for s in sent) == sorted(
        (w, g) for w in ("train-compile", "embed") for g in GPUS)
    sweep_ids = {s["tags"]["gpubench_sweep"] for s in sent}
    [sweep_id] = sweep_ids
    assert sweep_id.startswith("weekly-")

    runs = stored_runs(s3, s3_bucket, "sweeps")
    by_cell: dict[str, list[dict]] = {}
    for folder, files in runs.items():
        by_cell.setdefault(folder.rsplit("/", 1)[0], []).append(files)
    assert len(by_cell) == 6 and all(len(v) == 1 for v in by_cell.values())  # every cell once
    for cell, [files] in by_cell.items():
        _, workload, gpu, _ = cell.split("/")
        facts = json.loads(files["job.json"])
        if gpu == "A4000":
            assert facts["started_at"] is None and "capacity" in facts["error"]
            assert "results.jsonl" not in files  # no records, so no empty file for a report to trip on
        else:
            assert finished(files) == "ok", cell
            assert facts["gpu_type"] == gpu and facts["status"] == "succeeded"
            started = json.loads(files["results.jsonl"].splitlines()[0])
            assert started["workload"] == workload

    # Reported while it waited, and at the end.
    assert "queued: no capacity" in first.stderr
    assert "missing: train-compile on A4000: no capacity" in first.stderr
    assert "missing: embed on A4000: no capacity" in first.stderr
    summary = summary_object(s3, s3_bucket, f"sweeps/{sweep_id}/sweep.json")
    states = {(c["workload"], c["gpu"]): c["state"] for c in summary["cells"]}
    assert states == {(w, g): "no capacity" if g == "A4000" else "done"
                      for w in ("train-compile", "embed") for g in GPUS}
    assert not live_jobs(fake)

    # The same call again: nothing launched, the same cells reported.
    before = len(fake.requests)
    second = sweep(capsys, plan, "--store", store)
    assert second.code == exit_codes.JOB_NOT_SUCCEEDED, second.stderr
    assert len(submits(fake)) == 6
    assert not [r for r in fake.requests[before:] if r.method != "GET"]
    assert "missing: embed on A4000: no capacity" in second.stderr
    assert stored_runs(s3, s3_bucket, "sweeps").keys() == runs.keys()

    # The store renders as a site that opens offline: both studies, each run the sweep stored linked.
    out = tmp_path / "site"
    built = gpubench("site", f"s3://{s3_bucket}/sweeps", "--out", str(out), cwd=tmp_path, env=s3.env())
    assert built.code == 0, built.stderr
    pages = {p.name: p.read_text() for p in out.glob("*.html")}
    assert {"index.html", "train-compile.html", "embed.html"} <= set(pages)
    for name, text in pages.items():
        assert not re.search(r"(https?:)?//", text), name
    for workload in ("train-compile", "embed"):
        linked = re.findall(r"href='runs/([^/']+)/config\.json'", pages[f"{workload}.html"])
        assert len(linked) == 2, workload  # one run on each GPU that had capacity
        assert sorted(linked) == sorted(folder.rsplit("/", 1)[1] for folder in runs
                                        if folder.split("/")[1] == workload and "A4000" not in folder)

    # No secret in what was printed, written, stored or sent.
    objects = [text for files in runs.values() for text in files.values()] + [json.dumps(summary)]
    scanned = secret_texts(fake, first.stdout, first.stderr, second.stderr, folders=[tmp_path / "gpubench-results"],
                           objects=objects)
    for secret in (API_KEY, s3.secret_key):
        assert not [t for t in scanned if secret in t]
