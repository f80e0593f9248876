"""A container whose gpubench and guard both died (a reboot, kill -9 of both) is removed by the next docker run."""

import contextlib

import docker
from clirun import gpubench
from docker_engine import docker_args, engine_or_reason, new_run_id, stand_in_image

from gpubench.run.docker_run import LABEL, OWNER_LABEL, owner


def test_the_next_docker_run_removes_orphans_and_only_them(tmp_path):
    image = stand_in_image()
    client, _ = engine_or_reason()
    host, boot_id, _, start_time = owner().split("/")

    def sleeper(owner_label):
        container = client.containers.create(image["tag"], ["300"], entrypoint=["sleep"], init=True,
                                             labels={LABEL: "1", OWNER_LABEL: owner_label})
        container.start()
        return container

    orphan = sleeper(f"{host}/{boot_id}/999999999/{start_time}")  # that gpubench is gone
    alive = sleeper(owner())  # this very process: still running
    elsewhere = sleeper(f"another-host/{boot_id}/999999999/1")  # another machine's, on a shared engine
    try:
        # Any docker run reaps first: this one is then refused at once (no GPU runtime here), which is quick.
        result = gpubench(*docker_args(image, gpus="all"), cwd=tmp_path, env={"GPUBENCH_RUN_ID": new_run_id()},
                          timeout=120)
        assert result.code in (0, 2), result.stderr[-2000:]
        gone = []
        for container in (orphan, alive, elsewhere):
            try:
                container.reload()
                gone.append(container.status != "running")
            except docker.errors.NotFound:
                gone.append(True)
        assert gone == [True, False, False]
    finally:
        for container in (orphan, alive, elsewhere):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
        client.close()
