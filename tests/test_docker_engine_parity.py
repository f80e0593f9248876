"""`gpubench run train-compile --smoke --docker` through a real engine leaves what a plain local run leaves."""

import json

import pytest
from clirun import gpubench
from docker_engine import engine_or_reason, gpubench_containers, smoke_run

RUN_FILES = {"results.jsonl", "config.json", "run.log", "summary.md", "summary.csv"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    docker_run = smoke_run()
    cwd = tmp_path_factory.mktemp("local")
    local = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa", cwd=cwd)
    assert local.code == 0, local.stderr[-2000:]
    return docker_run, (cwd / "gpubench-results" / local.records()[0]["run_id"], local)


def test_exits_0_with_the_same_records_as_a_local_run(runs):
    docker_run, (_, local) = runs
    result = docker_run["result"]
    assert result.code == 0, result.stderr[-3000:]
    records, local_records = result.records(), local.records()
    assert [r["kind"] for r in records] == [r["kind"] for r in local_records]
    assert {r["run_id"] for r in records} == {docker_run["run_id"]}
    started, local_started = records[0], local_records[0]
    for field in ("workload", "setups", "repeats", "smoke", "config"):
        assert started[field] == local_started[field], field
    [docker_result] = [r for r in records if r["kind"] == "result"]
    [local_result] = [r for r in local_records if r["kind"] == "result"]
    assert docker_result["status"] == local_result["status"] == "ok" and docker_result["device"] == "cpu"
    assert {k: v["unit"] for k, v in docker_result["metrics"].items()} == \
        {k: v["unit"] for k, v in local_result["metrics"].items()}
    assert records[-1]["status"] == "ok" and records[-1]["summary"][0]["setup"] == "eager-sdpa"


def test_the_run_folder_holds_the_same_files_and_config(runs):
    docker_run, (local_folder, _) = runs
    folder = docker_run["cwd"] / "gpubench-results" / docker_run["run_id"]
    assert {p.name for p in folder.iterdir()} == {p.name for p in local_folder.iterdir()} == RUN_FILES
    assert (folder / "results.jsonl").read_text() == docker_run["result"].stdout
    config, local_config = (json.loads((f / "config.json").read_text()) for f in (folder, local_folder))
    assert set(config) == set(local_config) | {"docker"}
    assert config["config"] == local_config["config"] and config["run_id"] == docker_run["run_id"]
    assert config["environment"]["launcher"] == "docker"
    assert config["docker"]["image"] == docker_run["image"]["tag"] and config["docker"]["gpus"] == "none"
    assert "eager-sdpa" in (folder / "summary.md").read_text()
    assert (folder / "summary.csv").read_text().splitlines()[0] == \
        (local_folder / "summary.csv").read_text().splitlines()[0]
    assert "[1/1] train-compile eager-sdpa (repeat 1)" in (folder / "run.log").read_text()


def test_no_container_is_left_after_a_successful_run(runs):
    docker_run, _ = runs
    client, reason = engine_or_reason()
    assert client, reason
    assert gpubench_containers(client, run_id=docker_run["run_id"]) == []
