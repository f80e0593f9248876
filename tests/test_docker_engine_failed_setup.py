"""A setup that fails inside the container: its error row comes through, exit 1, and no container is left."""

from clirun import gpubench
from docker_engine import docker_args, engine_or_reason, gpubench_containers, new_run_id, stand_in_image


def test_a_failed_setup_is_recorded_and_its_container_removed(tmp_path):
    image = stand_in_image()
    client, _ = engine_or_reason()
    run_id = new_run_id()
    # This CPU-only image has no CUDA: asking the workload for it fails the setup inside the container.
    result = gpubench(*docker_args(image, "--set", "device=cuda"), cwd=tmp_path, env={"GPUBENCH_RUN_ID": run_id},
                      timeout=300)
    assert result.code == 1, result.stderr[-3000:]
    records = result.records()
    [row] = [r for r in records if r["kind"] == "result"]
    assert row["status"] == "error" and "CUDA" in row["error"]
    assert records[-1]["kind"] == "run_finished" and records[-1]["status"] == "failed"
    assert (tmp_path / "gpubench-results" / run_id / "summary.md").is_file()
    assert gpubench_containers(client, run_id=run_id) == []
    client.close()
