"""A launch that never ran (a sweep cell whose GPU had no capacity) leaves a run folder with an empty
results.jsonl beside its job.json, locally and in the store; reading a tree of runs skips it instead of
refusing the whole tree."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpubench.results import stored_runs

REAL = Path(__file__).resolve().parent.parent / "benchmarks/results/h200x2-2026-11-30/finetune/runs"


def _tree(root: Path) -> Path:
    [run] = [p for p in REAL.iterdir() if p.is_dir()][:1]
    shutil.copytree(run, root / "weekly-x/finetune/H200/abcd1234" / run.name)
    never = root / "weekly-x/finetune/A4000/abcd1234/finetune-20261201T000000Z-aaaaaa"
    never.mkdir(parents=True)
    (never / "results.jsonl").write_text("")
    (never / "job.json").write_text('{"status": "failed", "started_at": null, "error": "no capacity"}\n')
    return root


def test_a_folder_tree_skips_the_launch_that_never_ran(tmp_path):
    runs = stored_runs.discover([str(_tree(tmp_path))])
    assert len(runs) == 1 and runs[0].workload == "finetune"


def test_an_s3_prefix_skips_it_too(tmp_path, s3, s3_bucket, s3_env):
    tree = _tree(tmp_path / "tree")
    client = s3.client()
    for path in tree.rglob("*"):
        if path.is_file():
            client.put_object(Bucket=s3_bucket, Key=f"sweeps/{path.relative_to(tree)}", Body=path.read_bytes())
    runs = stored_runs.discover([f"s3://{s3_bucket}/sweeps"])
    assert len(runs) == 1 and runs[0].workload == "finetune"
