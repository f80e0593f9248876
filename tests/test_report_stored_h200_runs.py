"""The H200 runs stored in benchmarks/results under schema 1.2 (energy/) still report: their results read with the
harness's facts in the typed fields, and the table shows what it showed when they were written."""

from __future__ import annotations

from pathlib import Path

from clirun import gpubench

from gpubench.results import report, stored_runs

ENERGY = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200-2026-12-02" / "energy"


def test_the_stored_results_read_with_their_device_dtype_and_utilisation():
    runs = {run.workload: run for run in stored_runs.discover([str(ENERGY)])}
    assert set(runs) == {"sdxl", "train-compile"}
    for run in runs.values():
        for result in run.results:
            assert (result.device, result.device_name) == ("cuda:0", "NVIDIA H200")
            assert result.utilisation.scope == "timed" and result.utilisation.cores == 16
            assert "utilisation" not in result.info and "compute_dtype" not in result.info
    assert {r.dtype for r in runs["sdxl"].results} == {"float16"}  # sdxl said it in info
    assert {r.dtype for r in runs["train-compile"].results} == {None}  # train-compile left it to its config
    rows = {(built.spec.name, row.setup): row for built in report.build(list(runs.values())) for row in built.rows}
    assert rows[("sdxl", "eager-b4")].dtype == "float16" and report.datasheet_peak(rows[("sdxl", "eager-b4")]) == 989
    assert rows[("train-compile", "compile-sdpa")].dtype == "bfloat16"  # the run config's


def test_the_report_of_them_is_the_one_they_had(tmp_path):
    result = gpubench("report", str(ENERGY), cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "| NVIDIA H200 | - | eager-b4 | ok | 1/1 | 1.2 | 3,011 | 16.1 | 0.924 | 806 |  | 348 | 35.2% | throttled |" \
        in result.stdout
    assert "| NVIDIA H200 | - | compile-sdpa | ok | 1/1 | 68.2 | 120,107 | 12.5 | 63.1 | 5,743 |  | 386 | 39.1% |" \
        " compute-bound |" in result.stdout
