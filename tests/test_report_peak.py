"""How close to the machine: achieved TFLOP/s as a share of the GPU's dense datasheet peak for the dtype it ran in."""

import re

import pytest
from clirun import gpubench
from test_report_tables import table_rows, write_results

from gpubench.results import report, stored_runs


def of_peak(tmp_path, gpu, metrics, config=None, dtype=None):
    write_results(tmp_path / "runs" / "a", gpu, {"eager-sdpa": [metrics]}, config=config, dtype=dtype)
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    row = table_rows(result.stdout)[0]
    return row["TFLOP/s"], row["of peak"]


@pytest.mark.parametrize("gpu, achieved, config, dtype, expected", [
    # 494.5 of the H200's 989 dense bf16 TFLOP/s, the dtype the result says its matmuls ran in
    ("NVIDIA H200", 494.5, {}, "bfloat16", ("494", "50%")),
    # the result's dtype wins over the run config's: 33.5 of 67 fp32 (as bf16 it would be 3.39%)
    ("NVIDIA H200", 33.5, {"dtype": "bfloat16"}, "float32", ("33.5", "50%")),
    # a run stored before results said their dtype: the config's dtype, 189 of the H100 PCIe's 756 fp16
    ("NVIDIA H100 PCIe", 189, {"dtype": "float16"}, None, ("189", "25%")),
    # no datasheet for the device: achieved is shown, no share of a made-up peak
    ("Some Unknown Accelerator", 100, {"dtype": "bfloat16"}, None, ("100", "")),
])
def test_of_peak_is_achieved_over_the_datasheet_peak_for_the_dtype(tmp_path, gpu, achieved, config, dtype, expected):
    assert of_peak(tmp_path, gpu, {"step_ms": 100, "achieved_tflops": achieved}, config, dtype) == expected


def test_a_stored_pct_of_peak_is_shown_as_the_runner_recorded_it(tmp_path):
    # the runner computed it from the device it saw; the report does not recompute (494.5/989 would say 50%)
    metrics = {"step_ms": 100, "achieved_tflops": 494.5, "pct_of_peak": 42.0}
    assert of_peak(tmp_path, "NVIDIA H200", metrics, dtype="bfloat16") == ("494", "42%")


def test_workloads_that_count_no_flops_get_no_peak_columns(tmp_path):
    write_results(tmp_path / "runs" / "a", "NVIDIA H200", {"cache-warm": [{"total_s": 17.2}]}, workload="cold-start")
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "TFLOP/s" not in table_rows(result.stdout)[0] and "of peak" not in result.stdout


def test_the_peak_the_plot_draws_is_the_one_the_share_is_of(tmp_path):
    write_results(tmp_path / "runs" / "h200", "NVIDIA H200", {"eager-sdpa": [{"achieved_tflops": 494.5}]},
                  dtype="bfloat16")
    write_results(tmp_path / "runs" / "l40s", "NVIDIA L40S", {"eager-sdpa": [{"achieved_tflops": 100}]},
                  config={"dtype": "float16"})
    (built,) = report.build(stored_runs.discover([str(tmp_path / "runs")]))
    assert {row.gpu: (row.dtype, report.datasheet_peak(row)) for row in built.rows} == {
        "NVIDIA H200": ("bfloat16", 989), "NVIDIA L40S": ("float16", 362)}


def test_the_page_plots_achieved_tflops_only_for_workloads_that_count_them(tmp_path):
    write_results(tmp_path / "runs" / "a", "NVIDIA H200", {"eager-sdpa": [{"achieved_tflops": 494.5}]},
                  dtype="bfloat16")
    write_results(tmp_path / "runs" / "b", "NVIDIA H200", {"cache-warm": [{"total_s": 17.2}]}, workload="cold-start")
    page = tmp_path / "report.html"
    assert gpubench("report", str(tmp_path / "runs"), "--html", str(page), cwd=tmp_path).code == 0
    captions = re.findall(r"<img alt='([^']*)'", page.read_text())
    assert [c for c in captions if "TFLOP/s" in c] == ["train-compile: achieved TFLOP/s against the datasheet peak"]
