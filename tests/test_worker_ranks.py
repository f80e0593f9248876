"""A setup that asks for N processes, run by the worker in process (run_ranks): N rank processes with
torchrun's rendezvous, rank 0's records relayed, exactly one result row whatever happens to the ranks.
The workload is ddp-scaling's all-reduce setup at smoke size (gloo on the CPU, a few seconds)."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys

from gpubench.catalog import WORKLOADS
from gpubench.run import worker
from gpubench.schema import Progress, SetupResult, parse_record
from gpubench.workload import build_config, load

SETUP = "allreduce-2gpu"


def job(**overrides):
    module = load(WORKLOADS.get("ddp-scaling"))
    config = dataclasses.asdict(build_config(module, True, {}))
    config.update(overrides)
    return {"workload": "ddp-scaling", "setups": [SETUP], "repeat": 2, "run_id": "rid", "config": config,
            "smoke": True, "weights": "random"}


def run(the_job, world_size=2):
    out = io.StringIO()
    worker.run_ranks(the_job, out, world_size)
    return [parse_record(line) for line in out.getvalue().splitlines()]


def test_two_ranks_and_one_result_from_rank_0():
    assert worker._world_size(job()) == 2
    records = run(job())
    assert all(records)
    [result] = [r for r in records if isinstance(r, SetupResult)]
    assert (result.setup, result.repeat, result.run_id, result.status) == (SETUP, 2, "rid", "ok")
    assert result.metrics and any(isinstance(r, Progress) for r in records)


def test_ranks_that_all_fail_give_one_error_row():
    records = run(job(allreduce_min_mb=-1.0, allreduce_max_mb=-1.0))
    [result] = [r for r in records if isinstance(r, SetupResult)]
    assert (result.setup, result.repeat, result.status) == (SETUP, 2, "error")
    assert result.error


def test_a_rank_that_dies_is_named(monkeypatch, tmp_path):
    # Rank 1 dies at start (its interpreter exits 9 before the worker runs); rank 0 waits in vain.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import os\nif os.environ.get('RANK') == '1':\n    os._exit(9)\n")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    [result] = [r for r in run(job()) if isinstance(r, SetupResult)]
    assert (result.status, result.error) == ("error", "rank 1 failed (exit code 9); see its log")
    assert result.duration_s is not None and result.duration_s < 60


def test_a_rank_out_of_memory_makes_an_oom_row(monkeypatch, tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        f"import os\nif os.environ.get('RANK') == '1':\n    os._exit({worker.EXIT_RANK_OOM})\n")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    [result] = [r for r in run(job()) if isinstance(r, SetupResult)]
    assert (result.status, result.error) == ("oom", f"rank 1 failed (exit code {worker.EXIT_RANK_OOM}); see its log")


def test_rank_0_that_says_nothing_is_an_error_row(monkeypatch, tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import os\nif os.environ.get('RANK') == '0':\n    os._exit(0)\n")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    [result] = [r for r in run(job(), world_size=1) if isinstance(r, SetupResult)]
    assert (result.status, result.error) == ("error", "rank 0 reported nothing")


def test_the_ranks_see_torchrun_variables(tmp_path, monkeypatch):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import json, os\n"
        "keys = ('MASTER_ADDR', 'MASTER_PORT', 'RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE')\n"
        f"open(os.path.join({str(tmp_path)!r}, 'env-' + os.environ['RANK']), 'w').write("
        "json.dumps({k: os.environ.get(k) for k in keys}))\n")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    run(job())
    seen = [json.loads((tmp_path / f"env-{rank}").read_text()) for rank in (0, 1)]
    assert seen[0]["MASTER_PORT"] == seen[1]["MASTER_PORT"] and int(seen[0]["MASTER_PORT"]) > 0
    for rank, env in enumerate(seen):
        assert env == {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": seen[0]["MASTER_PORT"], "RANK": str(rank),
                       "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}


def test_stop_ends_every_rank_still_running():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    worker._stop([*procs, done])
    assert all(p.returncode is not None for p in procs) and done.returncode == 0


def test_main_runs_a_multi_process_setup_through_the_ranks(tmp_path, monkeypatch):
    out, err = open(tmp_path / "out", "w+"), open(tmp_path / "err", "w+")  # noqa: SIM115
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(job())))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    try:
        code = worker.main([])
    finally:
        monkeypatch.undo()
        out.close()
        err.close()
    records = [parse_record(line) for line in (tmp_path / "out").read_text().splitlines()]
    assert code == 0 and all(records)
    assert [r.status for r in records if isinstance(r, SetupResult)] == ["ok"]
