"""Runs of different configs are never pooled as repeats; runs are found at any depth, and a run kept twice
(its run folder and a copy of its records) is read once."""

from clirun import gpubench
from test_report_tables import table_rows, write_results


def report_rows(tmp_path):
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    return result.stdout, table_rows(result.stdout)


def test_runs_that_differ_in_config_get_rows_of_their_own(tmp_path):
    for name, steps, step_ms in (("a", 40, 100), ("b", 40, 110), ("c", 20, 300)):
        write_results(tmp_path / "runs" / name, "NVIDIA H200", {"eager-sdpa": [{"step_ms": step_ms}]},
                      config={"steps": steps, "dtype": "bfloat16"})
    stdout, rows = report_rows(tmp_path)
    by_gpu = {row["GPU"]: row for row in rows}
    assert set(by_gpu) == {"NVIDIA H200 (steps=20)", "NVIDIA H200 (steps=40)"}
    assert by_gpu["NVIDIA H200 (steps=40)"]["n"] == "2/2"  # the two runs of one config are repeats
    assert by_gpu["NVIDIA H200 (steps=40)"]["step_ms (ms)"].startswith("105 ")
    assert by_gpu["NVIDIA H200 (steps=20)"]["n"] == "1/1" and by_gpu["NVIDIA H200 (steps=20)"]["step_ms (ms)"] == "300"
    assert "Best GPU" not in stdout  # one GPU in two configs: nothing to rank


def test_runs_of_one_config_are_pooled_without_a_label(tmp_path):
    for name in ("a", "b"):
        write_results(tmp_path / "runs" / name, "NVIDIA H200", {"eager-sdpa": [{"step_ms": 100}]},
                      config={"steps": 40})
    _, rows = report_rows(tmp_path)
    assert [(row["GPU"], row["n"]) for row in rows] == [("NVIDIA H200", "2/2")]


def test_a_run_kept_twice_is_read_once_and_the_finished_copy_wins(tmp_path):
    # the same folder name gives the same run id: a job's captured stdout beside its run folder
    write_results(tmp_path / "runs" / "a-copy" / "job" / "run-1", "NVIDIA H200",
                  {"eager-sdpa": [{"step_ms": 100}]}, finished=False)
    write_results(tmp_path / "runs" / "b-run" / "still" / "run-1", "NVIDIA H200",
                  {"eager-sdpa": [{"step_ms": 100}]})
    write_results(tmp_path / "runs" / "x" / "y" / "z" / "run-2", "NVIDIA L40S", {"eager-sdpa": [{"step_ms": 200}]})
    stdout, rows = report_rows(tmp_path)
    assert {(row["GPU"], row["n"], row["status"]) for row in rows} == {
        ("NVIDIA H200", "1/1", "ok"), ("NVIDIA L40S", "1/1", "ok")}
    assert "partial" not in stdout


def test_the_page_draws_one_peak_line_per_gpu_class_across_configs(tmp_path):
    for name, steps in (("a", 40), ("b", 20)):
        write_results(tmp_path / "runs" / name, "NVIDIA H200", {"eager-sdpa": [{"achieved_tflops": 300 + steps}]},
                      config={"steps": steps}, dtype="bfloat16")
    result = gpubench("report", str(tmp_path / "runs"), "--html", str(tmp_path / "report.html"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    page = (tmp_path / "report.html").read_text()
    assert "NVIDIA H200 (steps=20)" in page and "NVIDIA H200 (steps=40)" in page
    assert "achieved TFLOP/s against the datasheet peak" in page
