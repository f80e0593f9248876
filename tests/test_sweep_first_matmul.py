"""Every study can be swept: a plan's first-matmul cells launch container instances as `gpubench-launch first-matmul`
does (create -> running -> SSH -> first matmul timed, stored with the container's records), under the plan's cap, and
the same call again launches nothing."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from sweep_support import finished, plan_text, sweep, write_plan

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_first_matmul_cells_launch_instances_and_resume(fake, launcher_env, capsys, tmp_path):
    plan = write_plan(tmp_path, plan_text([("first-matmul", ["L40S", "RTX5090"], ["--smoke"])]))
    first = sweep(capsys, plan)
    assert first.code == exit_codes.OK, first.stderr
    assert len(fake.instances) == 2 and all(i.status == "terminated" for i in fake.instances.values())
    assert fake.jobs == {}
    launches = [r for r in first.records() if r["kind"] == "result" and r["setup"] == "launch"]
    assert sorted(r["info"]["offer"]["gpu_type"] for r in launches) == ["L40S", "RTX5090"]
    for record in launches:
        m = {k: v["value"] for k, v in record["metrics"].items()}
        assert record["status"] == "ok" and 0 < m["create_to_running_s"] <= m["create_to_matmul_s"]
    folders = sorted((tmp_path / "gpubench-results").glob("*/first-matmul/*/*/*/results.jsonl"))
    assert [f.parts[-4] for f in folders] == ["L40S", "RTX5090"]
    assert all(finished({"results.jsonl": f.read_text()}) == "ok" for f in folders)
    [summary] = (tmp_path / "gpubench-results").glob("*/sweep.json")
    assert [c["state"] for c in json.loads(summary.read_text())["cells"]] == ["done", "done"]

    second = sweep(capsys, plan)
    assert second.code == exit_codes.OK, second.stderr
    assert len(fake.instances) == 2  # nothing launched again
    assert second.stderr.count(": done (stored run ") == 2
