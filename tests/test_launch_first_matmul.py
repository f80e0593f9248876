"""The launch-to-first-matmul study: per GPU type, create -> API running -> first SSH -> first CUDA
matmul (here `gpubench run first-matmul --smoke`, on the CPU), plus the failures met on the way,
stored as result records next to the container's own."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from test_launch_support import launch, run_folders

fake, launcher_env = support.fake, support.launcher_env
SLOWER = [{"minute_s": 1.0}]


def launch_records(result) -> dict[str, dict]:
    return {r["info"]["offer"]["gpu_type"]: r for r in result.records()
            if r["kind"] == "result" and r["setup"] == "launch"}


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_two_types_timed_with_429s_counted(fake, launcher_env, capsys, tmp_path):
    fake.inject("GET", r"/api/v1/instances/inst_[^/]+", 429, times=2, headers={"Retry-After": "0.05"})
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--gpu", "RTX5090", "--smoke")
    assert result.code == 0, result.stderr
    records = launch_records(result)
    assert set(records) == {"L40S", "RTX5090"}
    for record in records.values():
        m = {k: v["value"] for k, v in record["metrics"].items()}
        assert record["status"] == "ok"
        assert 0 < m["create_to_running_s"] <= m["create_to_ssh_s"] <= m["create_to_matmul_s"]
        assert m["create_failures_5xx"] == 0
    assert sum(r["metrics"]["rate_limited_429"]["value"] for r in records.values()) == 2
    matmuls = [r for r in result.records() if r["kind"] == "result" and r["setup"] == "matmul"]
    assert len(matmuls) == 2 and all(r["status"] == "ok" for r in matmuls)
    assert len(run_folders(tmp_path)) == 2
    assert all(i.status == "terminated" for i in fake.instances.values()) and len(fake.instances) == 2


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_create_500_falls_back_to_the_next_offer(fake, launcher_env, capsys, tmp_path):
    fake.inject("POST", r"/api/v1/instances", 500, code="provider_unavailable", message="provider unavailable")
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke")
    assert result.code == 0, result.stderr
    [record] = launch_records(result).values()
    assert record["metrics"]["create_failures_5xx"]["value"] == 1
    assert record["info"]["offer"]["region"] == "eu-west-1"  # the us-east-1 offer failed; the next one was taken
    assert record["device"] is None  # it ran no compute: the matmul's own record says where that ran
    [instance] = fake.instances.values()
    assert instance.instance_type["region"] == "eu-west-1"
    [folder] = run_folders(tmp_path)
    failures = json.loads((folder / "job.json").read_text())["failures"]
    assert [(f["call"], f["status"], f["code"]) for f in failures] == [
        ("instances.create", 500, "provider_unavailable")]


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_create_500_after_it_happened_uses_that_instance(fake, launcher_env, capsys):
    fake.inject("POST", r"/api/v1/instances", 500, code="provider_unavailable", after_action=True)
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--smoke")
    assert result.code == 0, result.stderr
    [instance] = fake.instances.values()  # no second instance: the list was read before relaunching
    assert instance.status == "terminated"


@pytest.mark.parametrize("fake", SLOWER, indirect=True)
def test_every_create_failing_is_recorded(fake, launcher_env, capsys, tmp_path):
    fake.inject("POST", r"/api/v1/instances", 400, times=None, code="instance_type_unavailable",
                message="Instance type is no longer available")
    result = launch(capsys, "first-matmul", "--gpu", "RTX5090", "--smoke")
    assert result.code == 3, result.stderr
    [record] = [r for r in result.records() if r["setup"] == "launch"]
    assert record["status"] == "error" and "no longer available" in record["error"]
    assert record["metrics"]["create_failures_4xx"]["value"] == 1
    assert fake.instances == {} and fake.ssh_keys == {}
    [folder] = run_folders(tmp_path)
    assert (folder / "results.jsonl").read_text().count('"setup":"launch"') == 1
