"""gpubench killed (SIGKILL) during a docker run: its guard process stops and removes the container."""

import signal

from docker_engine import (
    docker_args,
    engine_or_reason,
    gpubench_containers,
    new_run_id,
    stand_in_image,
    start_gpubench,
    wait_for_first_setup,
    wait_until_gone,
)


def test_a_killed_gpubench_leaves_no_container(tmp_path):
    image = stand_in_image()
    client, _ = engine_or_reason()
    run_id = new_run_id()
    proc = start_gpubench(docker_args(image, "--set", "timed_steps=100000"), tmp_path, run_id)
    try:
        wait_for_first_setup(proc, tmp_path / "gpubench-results" / run_id)
        [container] = gpubench_containers(client, run_id=run_id)
        assert container.status == "running"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.kill()
    # Nobody reads its output now: the guard stops it (SIGTERM, then SIGKILL after 10 s) and removes it.
    left = wait_until_gone(client, run_id)  # a safety net: busy cores slow the engine
    assert left == [], [(c.short_id, c.status) for c in left]
    client.close()
