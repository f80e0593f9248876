"""`gpubench run ddp-scaling --smoke`: real DDP over gloo, 1 and 2 CPU processes per setup, through the CLI."""

import statistics

import pytest
from clirun import gpubench

SETUPS = "allreduce-2gpu,124m-1gpu,124m-1gpu-accum4,124m-2gpu"
MICRO_BATCH, SEQ_LEN = 2, 32  # the SMOKE sizes


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = gpubench("run", "ddp-scaling", "--smoke", "--setups", SETUPS, "--price", "2.64",
                      cwd=tmp_path_factory.mktemp("ddp"))
    assert result.code == 0, result.stderr[-3000:]
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    derived = {r["setup"]: r["metrics"] for r in result.records() if r["kind"] == "derived"}
    return rows, derived


def value(row, name):
    return row["metrics"][name]["value"]


def test_every_setup_ran_with_one_process_per_gpu(run):
    rows, _ = run
    assert list(rows) == SETUPS.split(",") and {r["status"] for r in rows.values()} == {"ok"}
    for setup, world in (("124m-1gpu", 1), ("124m-2gpu", 2), ("allreduce-2gpu", 2)):
        info = rows[setup]["info"]
        assert (info["backend"], info["world_size"]) == ("gloo", world)
        assert (rows[setup]["device"], rows[setup]["dtype"]) == ("cpu", None if setup.startswith("allreduce") else
                                                                 "bfloat16")
        assert info["topology"] is None and "nvidia-smi" in info["topology_note"]  # no GPU here: said, not faked


def test_tokens_per_s_is_every_rank_s_tokens_over_the_median_step(run):
    rows, _ = run
    for setup, world, accum in (("124m-1gpu", 1, 1), ("124m-1gpu-accum4", 1, 4), ("124m-2gpu", 2, 1)):
        row = rows[setup]
        assert row["info"]["accumulation"] == accum
        assert value(row, "step_ms") == pytest.approx(statistics.median(row["info"]["step_ms_all"]), abs=1e-3)
        tokens = world * MICRO_BATCH * SEQ_LEN * accum
        assert value(row, "tokens_per_s") == pytest.approx(tokens / (value(row, "step_ms") / 1000), rel=1e-9)
        assert row["info"]["replicas_in_sync"] is True  # every rank ended with the same weights


def test_gradients_all_reduced_are_fp32_parameters(run):
    rows, _ = run
    row = rows["124m-2gpu"]
    assert value(row, "gradient_mb_per_step") == pytest.approx(value(row, "params_m") * 4, rel=1e-9)
    assert "gradient_mb_per_step" not in rows["124m-1gpu"]["metrics"]


def test_allreduce_reports_each_size_and_nccl_tests_bus_bandwidth(run):
    rows, _ = run
    row = rows["allreduce-2gpu"]
    sizes = row["info"]["allreduce"]
    assert [s["bytes"] for s in sizes] == [1 << 18, 1 << 19, 1 << 20]  # smoke: 0.25 MB to 1 MB, doubling
    for s in sizes:
        assert s["algbw_gbps"] == pytest.approx(s["bytes"] / (s["time_us"] * 1e-6) / 1e9, rel=1e-3)
        assert s["busbw_gbps"] == pytest.approx(s["algbw_gbps"] * row["info"]["bus_factor"], rel=1e-3)
    assert value(row, "busbw_peak_gbps") == pytest.approx(max(s["busbw_gbps"] for s in sizes), rel=1e-3)
    assert value(row, "busbw_median_gbps") == pytest.approx(statistics.median(s["busbw_gbps"] for s in sizes),
                                                           rel=1e-3)


def test_derived_speedup_and_efficiency_use_the_same_recipe_on_one_gpu(run):
    rows, derived = run
    speedup = value(rows["124m-2gpu"], "tokens_per_s") / value(rows["124m-1gpu"], "tokens_per_s")
    assert derived["124m-2gpu"]["speedup"]["value"] == pytest.approx(speedup, rel=1e-9)
    assert derived["124m-2gpu"]["scaling_efficiency_pct"]["value"] == pytest.approx(speedup / 2 * 100, rel=1e-9)
    assert derived["124m-1gpu-accum4"]["speedup"]["value"] == 1.0
    comm_ms = value(rows["124m-2gpu"], "gradient_mb_per_step") / value(rows["allreduce-2gpu"], "algbw_median_gbps")
    assert derived["124m-2gpu"]["allreduce_ms_est"]["value"] == pytest.approx(comm_ms, rel=1e-9)
    # the runner priced the whole machine; no GPUs here, so no per-GPU share is claimed
    assert "usd_per_1B_tokens" in rows["124m-2gpu"]["metrics"]
    assert "usd_per_1B_tokens_gpu_share" not in derived["124m-2gpu"]
