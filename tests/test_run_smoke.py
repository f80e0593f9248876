"""`gpubench run train-compile --smoke`: the whole local path, in a subprocess, on the CPU."""

import csv
import json

import pytest
from clirun import gpubench


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("run")
    result = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa,eager-eager", "--repeats", "2",
                      "--price", "1.15", cwd=cwd)
    return cwd, result


def test_exits_0_and_stdout_is_only_records_in_order(smoke_run):
    _, result = smoke_run
    assert result.code == 0, result.stderr[-2000:]
    records = result.records()  # every stdout line is JSON
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    results = [r for r in records if r["kind"] == "result"]
    assert [(r["setup"], r["repeat"]) for r in results] == [
        ("eager-sdpa", 1), ("eager-eager", 1), ("eager-sdpa", 2), ("eager-eager", 2)]
    assert "progress" in kinds
    assert {r["run_id"] for r in records} == {records[0]["run_id"]}


def test_results_carry_the_study_metrics_with_units(smoke_run):
    _, result = smoke_run
    for r in (r for r in result.records() if r["kind"] == "result"):
        assert r["status"] == "ok" and r["device"] == "cpu"
        m = {k: v["value"] for k, v in r["metrics"].items()}
        units = {k: v["unit"] for k, v in r["metrics"].items()}
        assert units["step_ms"] == "ms" and units["tokens_per_s"] == "tokens/s"
        # tokens/s is batch x seq_len over the mean step time, as in the study's script (smoke: 2 x 64)
        assert m["tokens_per_s"] == pytest.approx(2 * 64 / (m["step_ms"] / 1000), rel=1e-6)
        assert m["first_step_s"] > 0 and m["step_ms_p50"] > 0 and m["peak_mem_gib"] > 0
        # --price 1.15: million tokens per dollar = tokens/s x 3600 / 1.15 / 1e6
        assert m["1M_tokens_per_usd"] == pytest.approx(m["tokens_per_s"] * 3600 / 1.15 / 1e6, rel=1e-9)
        assert m["usd_per_1M_tokens"] == pytest.approx(1 / m["1M_tokens_per_usd"], rel=1e-9)


def test_run_finished_summarises_repeats_with_spread(smoke_run):
    _, result = smoke_run
    finished = result.records()[-1]
    assert finished["status"] == "ok"
    summary = {s["setup"]: s for s in finished["summary"]}
    step = summary["eager-sdpa"]["metrics"]["step_ms"]
    values = [r["metrics"]["step_ms"]["value"] for r in result.records()
              if r["kind"] == "result" and r["setup"] == "eager-sdpa"]
    assert step["n"] == 2 and step["min"] == min(values) and step["max"] == max(values)
    assert step["median"] == pytest.approx(sum(values) / 2) and step["cv"] is not None


def test_the_run_folder_explains_itself(smoke_run):
    cwd, result = smoke_run
    run_id = result.records()[0]["run_id"]
    folder = cwd / "gpubench-results" / run_id
    assert (folder / "results.jsonl").read_text() == result.stdout
    config = json.loads((folder / "config.json").read_text())
    assert config["workload"] == "train-compile" and config["repeats"] == 2 and config["smoke"] is True
    assert config["config"]["hidden_size"] == 64 and config["config"]["batch"] == 2
    assert config["price_usd_per_hour"] == 1.15
    env = config["environment"]
    assert env["libraries"]["torch"] and env["libraries"]["transformers"] and env["python"] and env["cpu_cores"]
    assert "eager-sdpa" in (folder / "run.log").read_text()


def test_environment_records_what_the_image_and_launcher_say(tmp_path):
    result = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa", cwd=tmp_path, env={
        "GPUBENCH_IMAGE": "ghcr.io/gpubench/train-compile:0.1.0", "GPUBENCH_GIT_COMMIT": "abc123",
        "GPUBENCH_GPU_REQUESTED": "RTX5090,L40S", "GPUBENCH_LAUNCHER": "runcrate-job",
        "GPUBENCH_PRICE_USD_PER_HOUR": "0.54", "GPUBENCH_RUN_ID": "train-compile-20261129T000000Z-abcdef"})
    assert result.code == 0, result.stderr[-2000:]
    started = result.records()[0]
    env = started["environment"]
    assert started["run_id"] == "train-compile-20261129T000000Z-abcdef"
    assert (env["image"], env["git_commit"], env["gpu_requested"], env["launcher"]) == (
        "ghcr.io/gpubench/train-compile:0.1.0", "abc123", "RTX5090,L40S", "runcrate-job")
    assert started["price_usd_per_hour"] == 0.54 and "price_usd_per_hour" not in env  # the run's, not the machine's
    ok = [r for r in result.records() if r["kind"] == "result"][0]
    assert "usd_per_1M_tokens" in ok["metrics"]  # the launcher's price reached the cost metrics


def test_a_price_list_with_no_entry_for_this_machine_leaves_costs_out(tmp_path):
    result = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa", cwd=tmp_path,
                      env={"GPUBENCH_PRICES_USD_PER_HOUR": "RTX5090=0.69,L40S=0.86"})
    assert result.code == 0, result.stderr[-2000:]
    assert "costs are left out" in result.stderr
    row = [r for r in result.records() if r["kind"] == "result"][0]
    assert not [name for name in row["metrics"] if "usd" in name]
    assert result.records()[0]["price_usd_per_hour"] is None


def test_the_run_ends_with_a_summary_table_saved_beside_the_records(smoke_run):
    cwd, result = smoke_run
    finished = result.records()[-1]
    folder = cwd / "gpubench-results" / finished["run_id"]
    table = (folder / "summary.md").read_text()
    assert "--smoke: these numbers test the code path" in table and table.splitlines()[-2].startswith("| eager-sdpa")
    assert table.rstrip("\n").split("\n", 2)[2] in result.stderr  # the same table was shown to the person
    header = next(line for line in table.splitlines() if line.startswith("| setup"))
    assert "usd_per_1M_tokens" in header and "peak_mem_gib" in header and "vs eager-sdpa" in header
    rows = list(csv.DictReader((folder / "summary.csv").open()))
    by_key = {(r["setup"], r["metric"]): r for r in rows}
    step = {s["setup"]: s for s in finished["summary"]}["eager-eager"]["metrics"]["step_ms"]
    assert float(by_key[("eager-eager", "step_ms")]["median"]) == pytest.approx(step["median"])
    assert int(by_key[("eager-eager", "step_ms")]["n"]) == 2
