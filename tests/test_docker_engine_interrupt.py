"""Ctrl-C (SIGINT to gpubench) during a docker run: passed on, recorded as interrupted, no container left."""

import json
import signal
import subprocess

from docker_engine import (
    docker_args,
    engine_or_reason,
    gpubench_containers,
    new_run_id,
    stand_in_image,
    start_gpubench,
    wait_for_first_setup,
)


def test_ctrl_c_is_passed_on_and_the_container_removed(tmp_path):
    image = stand_in_image()
    client, _ = engine_or_reason()
    run_id = new_run_id()
    # Enough steps that the setup is still running when Ctrl-C comes.
    proc = start_gpubench(docker_args(image, "--set", "timed_steps=100000"), tmp_path, run_id)
    folder = tmp_path / "gpubench-results" / run_id
    try:
        wait_for_first_setup(proc, folder)
        [container] = gpubench_containers(client, run_id=run_id)
        assert container.status == "running"
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)  # the design's worst case is 10 + 10 + 5 s
        except subprocess.TimeoutExpired:  # where it hung: every thread's stack, written by faulthandler
            proc.send_signal(signal.SIGABRT)
            proc.wait(timeout=30)
            stacks = (tmp_path / "stderr.txt").read_text()[-6000:]
            raise AssertionError(f"no exit 60 s after Ctrl-C:\n{stacks}") from None
    finally:
        proc.kill()
    stderr = (tmp_path / "stderr.txt").read_text()
    assert code == 130, stderr[-3000:]
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert records[-1]["kind"] == "run_finished" and records[-1]["status"] == "interrupted"  # the run inside saw it
    assert "passing Ctrl-C to container" in (folder / "run.log").read_text()
    assert gpubench_containers(client, run_id=run_id) == []
    client.close()
