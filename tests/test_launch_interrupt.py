"""Ctrl-C: the launcher cancels the job, reads its status back to confirm, stores what arrived, and
exits 130. Tested with a real SIGINT to a launcher process."""

from __future__ import annotations

import json
import signal

import pytest
import test_launch_support as support
from test_launch_support import API_KEY, LAUNCHER_PACE, emitter_command, launcher_process, read_until, run_folders

fake = support.fake


# The job's safety net is 31 API minutes: at the fast fake's 0.05 s a minute that is 1.55 s, less than the job needs
# to print its records on busy cores (it was timed out before the Ctrl-C came).
@pytest.mark.parametrize("fake", [{"minute_s": 4.0}], indirect=True)
def test_sigint_cancels_confirms_and_stores(fake, tmp_path):
    env = {"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
           "GPUBENCH_STATE_DIR": str(tmp_path / "state"), **LAUNCHER_PACE}
    command = emitter_command(hang_s=120)
    proc = launcher_process(["train-compile", "--gpu", "L40S", "--job-command", command], env, tmp_path)
    try:
        arrived = read_until(proc.stdout, lambda line: '"setup":"compile-sdpa"' in line and '"result"' in line)
        [job] = fake.jobs.values()
        assert job.status == "running"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert job.status == "cancelled"
    cancels = [r for r in fake.requests if r.method == "POST" and r.path == f"/api/v1/jobs/{job.id}/cancel"]
    assert len(cancels) == 1
    reads_after = fake.requests[fake.requests.index(cancels[0]) + 1:]
    assert any(r.method == "GET" and r.path == f"/api/v1/jobs/{job.id}" for r in reads_after)  # confirmed
    [folder] = run_folders(tmp_path)
    stored = (folder / "results.jsonl").read_text().splitlines()
    assert stored == [line.rstrip("\n") for line in arrived] + out.splitlines()
    assert [json.loads(line)["kind"] for line in stored] == ["run_started", "progress", "result", "progress", "result"]
    facts = json.loads((folder / "job.json").read_text())
    assert facts["stopped_by"] == "interrupt" and facts["cancel_confirmed"] is True
    assert facts["status"] == "cancelled"
    assert "cancelling" in err and "cancelled (interrupted)" in err
    assert not list((tmp_path / "state" / "launches").glob("*.json"))  # nothing left for cleanup
