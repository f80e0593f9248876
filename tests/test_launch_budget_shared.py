"""One request budget per launcher process: parallel jobs share it, so the API never sees more than
the budget's rate (plus its burst), however many jobs run, and no line is lost on the way."""

from __future__ import annotations

import json
import threading
import time

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders

fake, launcher_env = support.fake, support.launcher_env

RATE, BURST = 5.0, 3.0
GPUS = ("L40S", "A4000", "RTX5090", "A100")


class RequestTimes:
    """When each request reached the fake (sampled every few ms from outside the launcher)."""

    def __init__(self, fake):
        self.fake, self.times, self.running = fake, [], True
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while self.running:
            now, seen = time.monotonic(), len(self.fake.requests)
            self.times += [now] * (seen - len(self.times))
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()

    def most_in(self, window_s: float) -> int:
        most, start = 0, 0
        for end, at in enumerate(self.times):
            while at - self.times[start] > window_s:
                start += 1
            most = max(most, end - start + 1)
        return most


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_parallel_jobs_share_one_budget(fake, launcher_env, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_API_RATE", str(RATE))
    monkeypatch.setenv("GPUBENCH_API_BURST", str(BURST))
    # Four chatty jobs: alone, each would read its log every 20 ms (GPUBENCH_STREAM_GAP_S).
    args = ["train-compile", "--each", "--job-command",
            emitter_command(setups=("a", "b", "c"), lines=5, sleep_s=0.4)]
    for gpu in GPUS:
        args += ["--gpu", gpu]
    with RequestTimes(fake) as sampled:
        result = launch(capsys, *args)
    assert result.code == 0, result.stderr

    for window in (1.0, 2.0, 4.0):
        # The bucket's promise, with one request of slack for the sampling.
        assert sampled.most_in(window) <= RATE * window + BURST + 1, (window, sampled.most_in(window))
    assert len(sampled.times) >= 4 * 5  # the jobs did talk to the API (submit, logs, status, facts)

    folders = run_folders(tmp_path)
    assert len(folders) == len(GPUS)
    for folder in folders:  # nothing lost: every line of every job is in its folder
        kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
        assert kinds.count("result") == 3 and kinds.count("progress") == 3 and kinds[-1] == "run_finished"
        log = "\n".join(p.read_text() for p in folder.glob("*.log"))
        for setup in ("a", "b", "c"):
            for n in range(5):
                assert f"line {setup} {n} " in log, sorted(p.name for p in folder.iterdir())
