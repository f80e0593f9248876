"""--via instance: a container instance runs the command from its launch script, the launcher streams
the output over SSH, terminates the instance and checks the list no longer shows it live."""

from __future__ import annotations

import json
import signal

import pytest
import test_launch_support as support
from test_launch_support import (
    API_KEY,
    LAUNCHER_PACE,
    emitter_command,
    launch,
    launcher_process,
    read_until,
    run_folders,
)

fake, launcher_env = support.fake, support.launcher_env
SLOWER = [{"minute_s": 1.0}]  # instance max_runtime counts API minutes: keep them real enough


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_instance_run_end_to_end(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "L40S",
                    "--job-command", emitter_command(lines=20))
    assert result.code == 0, result.stderr
    assert [r["kind"] for r in result.records()] == [
        "run_started", "progress", "result", "progress", "result", "run_finished"]
    [instance] = fake.instances.values()
    assert instance.status == "terminated" and instance.stop_reason == "user"
    assert instance.instance_type["deployment_type"] == "container"
    assert fake.ssh_keys == {}  # the run's own key is gone too
    [create] = [r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/instances"]
    body = json.loads(create.body)
    assert body["instance_type_id"] == "calm-lovelace-l40s-5e6f"  # the cheapest container L40S
    assert body["env_vars"]["GPUBENCH_LAUNCHER"] == "runcrate-instance"
    assert "bash -c" in body["launch_script"] and API_KEY not in create.body.decode()
    lists = [r for r in fake.requests if r.method == "GET" and r.path == "/api/v1/instances"]
    assert lists, "the instance list was never read back after terminate"

    [folder] = run_folders(tmp_path)
    log = (folder / "run.log").read_text().splitlines()
    assert [line.rsplit(" ", 1)[0] for line in log if line.startswith("line ")] == [
        f"line {s} {n}" for s in ("eager-sdpa", "compile-sdpa") for n in range(20)]
    assert "starting: some text for run.log" in log
    facts = json.loads((folder / "job.json").read_text())
    assert facts["via"] == "instance" and facts["terminated_confirmed"] is True
    timeline = facts["timeline_s"]
    assert 0 <= timeline["api_running_s"] <= timeline["first_ssh_s"] <= timeline["first_result_s"]


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_instance_command_failure_is_exit_3(fake, launcher_env, capsys):
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "RTX5090",
                    "--job-command", emitter_command(exit=9))
    assert result.code == 3, result.stderr
    assert "command exit code 9" in result.stderr
    assert all(i.status == "terminated" for i in fake.instances.values())


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_sigint_terminates_the_instance(fake, tmp_path):
    env = {"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
           "GPUBENCH_STATE_DIR": str(tmp_path / "state"), **LAUNCHER_PACE}
    proc = launcher_process(["train-compile", "--via", "instance", "--gpu", "L40S",
                             "--job-command", emitter_command(hang_s=120)], env, tmp_path)
    try:
        read_until(proc.stdout, lambda line: '"kind":"result"' in line and "compile-sdpa" in line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    [instance] = fake.instances.values()
    assert instance.status == "terminated"
    [folder] = run_folders(tmp_path)
    facts = json.loads((folder / "job.json").read_text())
    assert facts["stopped_by"] == "interrupt" and facts["terminated_confirmed"] is True
    assert len((folder / "results.jsonl").read_text().splitlines()) == 5


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_lost_instance_is_exit_5(fake, launcher_env, capsys):
    import threading

    from test_launch_support import wait_for

    def lose():
        instance = wait_for(lambda: next(iter(fake.instances.values()), None), what="an instance")
        wait_for(lambda: (instance.home / "gpubench").is_dir() and instance.status == "running", what="running")
        fake.lose_instance(instance.id)

    threading.Thread(target=lose, daemon=True).start()
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "L40S",
                    "--job-command", emitter_command(hang_s=120))
    assert result.code == 5, result.stderr
    [instance] = fake.instances.values()
    assert f"lost: instance {instance.id}" in result.stderr


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_max_minutes_terminates_the_instance(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "L40S", "--max-minutes", "0.03",
                    "--job-command", emitter_command(hang_s=120))
    assert result.code == 4, result.stderr
    assert "--max-minutes reached: terminating the instance" in result.stderr
    [instance] = fake.instances.values()
    assert instance.status == "terminated"
    run_id = result.records()[0]["run_id"]
    status = launch(capsys, "status", run_id)
    assert status.code == 0 and f"instance   {instance.id}" in status.stdout
    assert "status     terminated" in status.stdout and "local      gpubench-results/" in status.stdout
