"""On HTTP 429 the shared budget stops every job's requests until Retry-After has passed, halves
its rate, says so on stderr, and the run still ends with nothing lost."""

from __future__ import annotations

import json
import threading
import time

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders

fake, launcher_env = support.fake, support.launcher_env

RETRY_AFTER_S = 1.2


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_429_pauses_all_jobs_and_slows_down(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_API_RATE", "20")
    stamps: list[tuple[float, str]] = []  # (when the fake saw it, path)
    running = True

    def sample():
        while running:
            now = time.monotonic()
            stamps.extend((now, r.path) for r in fake.requests[len(stamps):])
            time.sleep(0.005)

    def inject_once_running():
        support.wait_for(lambda: len(fake.jobs) == 2 and all(b"line" in _output(j) for j in fake.jobs.values()),
                         what="two printing jobs")
        fake.inject("GET", r"/api/v1/jobs/[^/]+/logs", 429, times=1, headers={"Retry-After": str(RETRY_AFTER_S)})

    threads = [threading.Thread(target=f, daemon=True) for f in (sample, inject_once_running)]
    for t in threads:
        t.start()
    args = ["train-compile", "--each", "--gpu", "L40S", "--gpu", "A4000", "--job-command",
            emitter_command(setups=("a", "b", "c"), lines=3, sleep_s=0.5)]
    result = launch(capsys, *args)
    running = False
    for t in threads:
        t.join(timeout=30)
    assert result.code == 0, result.stderr

    from gpubench.launcher.runcrate.budget import process_budget

    assert process_budget().rate_limited == 1
    # Both jobs keep the API busy (status reads every 0.3 s, a log read per printed line), so the one
    # silence as long as Retry-After is the budget holding every job back after the 429.
    longest = max(stamps[i + 1][0] - stamps[i][0] for i in range(len(stamps) - 1))
    assert longest >= RETRY_AFTER_S * 0.9, longest
    assert "holding back API requests" in result.stderr and "after HTTP 429" in result.stderr

    for folder in run_folders(tmp_path):  # nothing lost
        kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
        assert kinds.count("result") == 3 and kinds[-1] == "run_finished"


def _output(job) -> bytes:
    page = job.logs.page(0, 10000)
    return "".join(c.text for c in page.chunks).encode()
