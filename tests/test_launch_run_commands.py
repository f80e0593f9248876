"""`status`, `logs` and `cancel` for a run id, while its launcher runs in another process."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, launcher_process, read_until

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", [{"minute_s": 2.0}], indirect=True)
def test_status_logs_cancel(fake, launcher_env, capsys, tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    proc = launcher_process(["train-compile", "--gpu", "L40S", "--job-command", emitter_command(hang_s=120)],
                            launcher_env, folder)
    try:
        lines = read_until(proc.stdout, lambda line: '"kind":"result"' in line and "compile-sdpa" in line)
        run_id = json.loads(lines[0])["run_id"]
        [job] = fake.jobs.values()

        status = launch(capsys, "status", run_id)
        assert status.code == 0, status.stderr
        assert f"job        {job.id}" in status.stdout and "status     running" in status.stdout
        assert "region     us-east-1" in status.stdout

        logs = launch(capsys, "logs", run_id)
        assert logs.code == 0, logs.stderr
        assert "starting: some text for run.log" in logs.stdout
        assert [line for line in logs.stdout.splitlines() if line.startswith("{")] == [
            line.rstrip("\n") for line in lines]

        cancelled = launch(capsys, "cancel", run_id)
        assert cancelled.code == 0, cancelled.stderr
        assert f"job {job.id} cancelled" in cancelled.stderr
        assert job.status == "cancelled"

        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err  # cancelled by someone else: the job did not succeed
        assert launch(capsys, "cancel", run_id).stderr.strip() == f"gpubench-launch: job {job.id} already cancelled"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_unknown_run_id(fake, launcher_env, capsys):
    result = launch(capsys, "status", "train-compile-20990101T000000Z-abcdef")
    assert result.code == 2
    assert result.stderr.strip() == ("gpubench-launch: error: no gpubench job or instance for run id "
                                     "'train-compile-20990101T000000Z-abcdef'")
