"""--each: one job per GPU type, in parallel, each with its own run folder; while they sit idle the
API sees about one request per poll interval per job (upper bound; a slow machine only asks less)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders, wait_for

fake, launcher_env = support.fake, support.launcher_env

GPUS = ("L40S", "A4000", "RTX5090")
POLL_S = 0.25


# A slow API clock: the safety net (31 API minutes) must outlast three jobs starting on two busy cores.
@pytest.mark.parametrize("fake", [{"minute_s": 4.0}], indirect=True)
def test_each_runs_in_parallel_and_polls_gently(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_POLL_S", str(POLL_S))
    window = {}
    release = tmp_path / "release"  # the jobs hang until it exists: the window is measured while all three idle

    def measure_idle_window():
        # All three jobs printed their records and now hang: count the API requests for a while.
        try:
            wait_for(lambda: len(fake.jobs) == 3 and all(b"hanging" in _output(j) for j in fake.jobs.values()),
                     timeout_s=90, what="three idle jobs")
            start_n, start_t = len(fake.requests), time.monotonic()
            time.sleep(3.0)
            window["requests"] = len(fake.requests) - start_n
            window["seconds"] = time.monotonic() - start_t
        finally:
            release.touch()

    watcher = threading.Thread(target=measure_idle_window, daemon=True)
    watcher.start()
    args = ["train-compile", "--each", "--job-command", emitter_command(hang_s=100, release=str(release))]
    for gpu in GPUS:
        args += ["--gpu", gpu]
    result = launch(capsys, *args)
    watcher.join(timeout=30)
    assert result.code == 0, result.stderr

    folders = run_folders(tmp_path)
    assert len(folders) == 3
    obtained = sorted(json.loads((f / "job.json").read_text())["gpu_type"] for f in folders)
    assert obtained == sorted(GPUS)
    run_ids = {r["run_id"] for r in result.records()}
    assert run_ids == {f.name for f in folders}
    submits = [json.loads(r.body) for r in fake.requests if r.method == "POST" and r.path == "/api/v1/jobs"]
    assert sorted(s["gpu_type"][0] for s in submits) == sorted(GPUS) and all(len(s["gpu_type"]) == 1
                                                                            for s in submits)
    # Per idle job: a held log read at most every 1.5 poll intervals plus a status read every 3.
    budget = 3 * (window["seconds"] / (1.5 * POLL_S) + window["seconds"] / (3 * POLL_S) + 2)
    assert window["requests"] <= budget, window
    assert window["requests"] > 0


def _output(job) -> bytes:
    page = job.logs.page(0, 10000)
    return "".join(c.text for c in page.chunks).encode()
