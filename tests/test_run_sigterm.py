"""`gpubench run` stopped with SIGTERM after its first result, as `docker stop` (the main process) and `scancel` (every
process of the job) stop it: exit 130, what was measured is kept, the run recorded as `interrupted`."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from clirun import stopped

from gpubench import exit_codes


@pytest.mark.parametrize("to", ["main process", "process group"])
def test_sigterm_after_the_first_result_keeps_it_and_records_interrupted(tmp_path, to):
    def after_the_first_result(proc, line) -> bool:
        if json.loads(line)["kind"] != "result":
            return False
        if to == "main process":
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
        return True

    run = stopped("run", "first-matmul", "--smoke", "--repeats", "20", cwd=tmp_path, stop=after_the_first_result)
    assert run.code == exit_codes.INTERRUPTED, run.stderr[-3000:]
    records = run.records()
    results = [r for r in records if r["kind"] == "result"]
    assert records[-1]["kind"] == "run_finished" and records[-1]["status"] == "interrupted"
    assert results and len(results) < 20
    assert all(r["status"] == "ok" for r in results), [r.get("error") for r in results]  # no row blames the stop
    folder = tmp_path / "gpubench-results" / records[0]["run_id"]
    assert (folder / "results.jsonl").read_text() == run.stdout
    assert (folder / "summary.md").exists()


def test_a_worker_ended_by_sigterm_is_an_interrupted_run_not_a_failed_setup(tmp_path):
    def its_worker(proc, line) -> bool:  # between results the next repeat's worker starts: stop it alone
        while proc.poll() is None and (worker := _worker_of(proc.pid)):
            try:
                os.kill(worker, signal.SIGTERM)
                return True
            except ProcessLookupError:
                pass
        return False

    run = stopped("run", "first-matmul", "--smoke", "--repeats", "50", cwd=tmp_path, stop=its_worker)
    assert run.code == exit_codes.INTERRUPTED, run.stderr[-3000:]
    records = run.records()
    assert records[-1]["kind"] == "run_finished" and records[-1]["status"] == "interrupted"
    assert all(r["status"] == "ok" for r in records if r["kind"] == "result")


def _worker_of(pid: int) -> int | None:
    """The run's worker process (`python -P -m gpubench.run.worker`), if one is running now."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"gpubench.run.worker" in cmdline:
            return int(child)
    return None
