"""`gpubench run --docker` that cannot start its container leaves nothing: an image the engine lacks and cannot pull
(no registry reachable, or no such image) is one line and exit 2 before anything is written; a container the engine
cannot give GPUs (no nvidia runtime) removes the run folder and the ./gpubench-results/ it made."""

import io
import tarfile

import pytest
from clirun import gpubench
from docker_engine import engine_or_reason

EMPTY_IMAGE = "gpubench-test/empty:0"  # no files at all: the engine refuses its GPU request before running anything


@pytest.fixture(scope="module")
def engine():
    client, why = engine_or_reason()
    if client is None:
        pytest.skip(f"no Docker engine: {why}")
    yield client
    client.close()


def test_a_failed_pull_is_one_line_and_leaves_no_folder(engine, tmp_path):
    image = "gpubench-test/never-built:0"
    result = gpubench("run", "train-compile", "--smoke", "--docker", "--image", image, "--gpus", "none",
                      cwd=tmp_path, timeout=180)
    assert result.code == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert lines[:-1] == [f"[gpubench] pulling {image}"]
    assert lines[-1].startswith(f"gpubench: error: cannot pull {image} (") and lines[-1].endswith(
        "; build it with tools/build_images.sh (a clone of the repository) or pass --image")
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_a_failed_pull_into_a_results_folder_that_exists_leaves_it_as_it_was(engine, tmp_path):
    kept = tmp_path / "results"
    (kept / "an-earlier-run").mkdir(parents=True)
    result = gpubench("run", "train-compile", "--smoke", "--docker", "--image", "gpubench-test/never-built:0",
                      "--gpus", "none", "--results-dir", str(kept), cwd=tmp_path, timeout=180)
    assert result.code == 2
    assert [p.name for p in kept.iterdir()] == ["an-earlier-run"]


@pytest.fixture(scope="module")
def empty_image(engine):
    archive = io.BytesIO()
    tarfile.open(fileobj=archive, mode="w").close()
    engine.api.import_image_from_data(archive.getvalue(), repository=EMPTY_IMAGE.split(":")[0], tag="0")
    return EMPTY_IMAGE


def test_a_container_that_gets_no_gpu_leaves_no_results_folder(engine, empty_image, tmp_path):
    if "nvidia" in (engine.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime: GPUs can be given here")
    result = gpubench("run", "train-compile", "--smoke", "--docker", "--image", empty_image, "--gpus", "all",
                      cwd=tmp_path, timeout=180)
    assert result.code == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("gpubench: error: this Docker engine has no GPU runtime")
    assert list(tmp_path.iterdir()) == []
