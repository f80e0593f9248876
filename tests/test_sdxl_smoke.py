"""`gpubench run sdxl --smoke` through the real CLI, each setup in its own process, on the CPU: eager at batch 1 and 4
and compiled at batch 4 (every path: eager, compiled, one image and four a call; and the figures derived across
setups). compile-b1 is compile-b4's path at batch 1; the derive rules for every pair are test_sdxl_derive's."""

import pytest
from clirun import gpubench

PRICE = 1.14  # the study's L40S, $/hour


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    result = gpubench("run", "sdxl", "--smoke", "--setups", "eager-b1,eager-b4,compile-b4", "--price", str(PRICE),
                      cwd=tmp_path_factory.mktemp("run"))
    assert result.code == 0, result.stderr[-3000:]
    return result


def rows(run, kind):
    return {r["setup"]: r for r in run.records() if r["kind"] == kind}


def values(record):
    return {name: m["value"] for name, m in record["metrics"].items()}


def test_every_setup_reports_the_studys_metrics(run):
    results = rows(run, "result")
    assert list(results) == ["eager-b1", "eager-b4", "compile-b4"]
    for setup, row in results.items():
        assert row["status"] == "ok" and (row["device"], row["dtype"]) == ("cpu", "float32"), setup
        m = values(row)
        assert m["s_per_image"] > 0 and m["peak_mem_gib"] > 0 and m["load_s"] > 0
        assert m["images_per_hour"] == pytest.approx(3600 / m["s_per_image"], rel=1e-9)
        assert m["images_per_s"] == pytest.approx(1 / m["s_per_image"], rel=1e-9)
        # $ per 1,000 images = hourly price / images per hour x 1,000, the study's formula
        assert m["usd_per_1k_images"] == pytest.approx(PRICE / m["images_per_hour"] * 1000, rel=1e-9)
        assert row["metrics"]["peak_mem_gib"]["unit"] == "GiB" and row["info"]["peak_mem"].startswith("host")


def test_compile_time_is_the_first_compiled_call_and_only_compiled_setups_have_one(run):
    results = rows(run, "result")
    for setup, row in results.items():
        m = values(row)
        assert ("compile_s" in m) == setup.startswith("compile-")
        if "compile_s" in m:
            assert m["compile_s"] == m["warmup_s"]
            assert "fullgraph=True" in row["info"]["compile"] and "channels_last" in row["info"]["compile"]
            assert f"batch {row['info']['batch']} alone" in row["info"]["compile"]


def test_info_says_what_ran(run):
    results = rows(run, "result")
    for setup, row in results.items():
        info = row["info"]
        assert info["batch"] == (4 if setup.endswith("b4") else 1)
        assert info["timed_images"] == (4 if setup.endswith("b4") else 1)
        assert info["weights"].startswith("random, tiny") and info["scheduler"] == "EulerDiscreteScheduler"
        assert info["resolution"] == "64x64" and info["steps"] == 2


def test_derived_break_even_from_the_same_runs_numbers(run):
    results = {setup: values(row) for setup, row in rows(run, "result").items()}
    derived = rows(run, "derived")
    assert set(derived) == {"compile-b4", "eager-b4"}
    eager, compiled = results["eager-b4"], results["compile-b4"]
    d = values(derived["compile-b4"])
    saved = eager["s_per_image"] - compiled["s_per_image"]
    assert d["saved_s_per_image"] == pytest.approx(saved, rel=1e-9)
    if saved > 0:
        assert d["break_even_images"] == pytest.approx(compiled["compile_s"] / saved, rel=1e-9)
    else:  # a slower compiled setup never pays back: no number is made up
        assert "break_even_images" not in d
    summary = {s["setup"]: s for s in run.records()[-1]["summary"]}["compile-b4"]
    assert summary["metrics"]["saved_s_per_image"]["median"] == d["saved_s_per_image"]  # and in the summary
    gain = values(derived["eager-b4"])["throughput_vs_b1_pct"]
    assert gain == pytest.approx(100 * (results["eager-b4"]["images_per_s"] / results["eager-b1"]["images_per_s"] - 1))
