"""Dropped log-follow connections: the launcher asks again from its last cursor, so no line is lost
or repeated, even when the SDK's own retries run out."""

from __future__ import annotations

import json
import threading

import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders, wait_for

fake, launcher_env = support.fake, support.launcher_env

LOGS = r"/api/v1/jobs/[^/]+/logs"


def test_drops_mid_stream_lose_and_repeat_nothing(fake, launcher_env, capsys, tmp_path):
    def drop_when_streaming():
        # Once output flows: 5 reads in a row answered by a closed connection (after the server read
        # the page), more than the SDK's 3 retries, so the launcher's own resume runs too.
        job = wait_for(lambda: next(iter(fake.jobs.values()), None), what="the job")
        wait_for(lambda: job.logs.total_bytes > 2000, what="output")
        fake.inject("GET", LOGS, None, times=5, drop=True, after_action=True)

    threading.Thread(target=drop_when_streaming, daemon=True).start()
    command = emitter_command(lines=300, sleep_s=0.3)
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", command)
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    text_lines = [line for line in (folder / "run.log").read_text().splitlines() if line.startswith("line ")]
    expected = [f"line {setup} {n}" for setup in ("eager-sdpa", "compile-sdpa") for n in range(300)]
    assert [line.rsplit(" ", 1)[0] for line in text_lines] == expected
    kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
    assert kinds == ["run_started", "progress", "result", "progress", "result", "run_finished"]
    follow = json.loads((folder / "job.json").read_text())["follow"]
    assert follow["log_errors"] >= 1 and follow["complete"] is True


def test_rate_limited_reads_are_survived(fake, launcher_env, capsys, tmp_path):
    # A long 429 period on every read (with Retry-After): the SDK retries, then the launcher slows down.
    fake.inject("GET", r"/api/v1/jobs/[^/]+(/logs)?", 429, times=12, headers={"Retry-After": "0.05"})
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command", emitter_command())
    assert result.code == 0, result.stderr
    [folder] = run_folders(tmp_path)
    assert len((folder / "results.jsonl").read_text().splitlines()) == 6
