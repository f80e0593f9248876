"""`--gpus` on an engine with no GPU runtime: a one-line choice, not an engine error; `--gpus none` runs on the CPU."""

import pytest
from clirun import gpubench
from docker_engine import docker_args, engine_or_reason, gpubench_containers, new_run_id, stand_in_image

NO_GPU = ("gpubench: error: this Docker engine has no GPU runtime (nvidia); use --gpus none to run on the CPU in the"
          " container, or install the NVIDIA Container Toolkit")


EXPECTED = ("expected all, none, a count (2), device ids (0,2, device=0 or device=GPU-<uuid>),"
            " capabilities=compute,utility")


@pytest.fixture(scope="module")
def engine():
    image = stand_in_image()
    client, _ = engine_or_reason()
    if "nvidia" in (client.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime: GPUs can be given here")
    yield client, image
    client.close()


@pytest.mark.parametrize("gpus", [None, "all", "2", "0,1", "device=GPU-0c5e"])
def test_asking_for_gpus_is_one_line_with_the_choice_and_leaves_nothing(engine, tmp_path, gpus):
    client, image = engine
    run_id = new_run_id()
    result = gpubench(*docker_args(image, gpus=gpus), cwd=tmp_path, env={"GPUBENCH_RUN_ID": run_id}, timeout=120)
    assert result.code == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == NO_GPU
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "gpubench-results").exists()  # no half-written run folder, nor the folder made for it
    assert gpubench_containers(client, run_id=run_id) == []  # the created container is removed too


@pytest.mark.parametrize(("gpus", "message"), [
    ("0", "gpubench: error: --gpus 0 asks for no GPU: say --gpus none, or --gpus device=0 for the first GPU"),
    ("all,1", f"gpubench: error: --gpus 'all,1': all and other GPUs together; {EXPECTED}"),
    (" , ", f"gpubench: error: --gpus ' , ': no GPU named; {EXPECTED}"),
    ("banana", f"gpubench: error: --gpus 'banana': 'banana' is not a GPU index, GPU-<uuid> or MIG-<uuid>; {EXPECTED}"),
])
def test_a_bad_gpus_value_is_refused_before_anything_starts(tmp_path, gpus, message):
    result = gpubench("run", "train-compile", "--smoke", "--docker", "--gpus", gpus, cwd=tmp_path, timeout=60)
    assert result.code == 2 and result.stderr.strip().splitlines() == [message]
    assert not (tmp_path / "gpubench-results").exists()


def test_gpus_without_docker_is_refused(tmp_path):
    result = gpubench("run", "train-compile", "--smoke", "--gpus", "none", cwd=tmp_path, timeout=60)
    assert result.code == 2
    assert result.stderr.strip() == ("gpubench: error: --gpus applies only with --docker (the container's GPUs);"
                                     " add --docker or drop --gpus")
