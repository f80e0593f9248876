"""Every reader of stored runs (report, site, recommend, compare) says the lines it skipped the same way: how many,
then each with its file, line and why. A GPU whose result lines all carry a JSON NaN is no longer dropped from
recommend's ranking without a word: its lines are named, and the GPU is named as not ranked."""

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli.main import cli

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def store(root: Path) -> tuple[Path, Path]:
    """Two sdxl runs on the H200; one on the H100 whose two result lines carry NaN (as Python's json writes it)."""
    for run in range(2):
        write_run(root / f"h200-{run}", "sdxl", H200, 3.5, DAY0 + timedelta(hours=run),
                  {"compile-b4": [{"images_per_s": 7.0}, {"images_per_s": 7.1}]}, progress=1)
    nan = write_run(root / "h100", "sdxl", H100, 2.5, DAY0, {"compile-b4": [{"images_per_s": 4.9},
                                                                            {"images_per_s": 5.0}]}, progress=1)
    records = nan / "results.jsonl"
    text = records.read_text()
    for value in ("4.9", "5.0"):
        text = text.replace(f'"value":{value},', '"value":NaN,', 1)
    records.write_text(text)
    return root, records


def damaged_lines(records: Path) -> list[int]:
    return [n for n, line in enumerate(records.read_text().splitlines(), 1) if "NaN" in line]


def said(stderr: str, records: Path) -> list[str]:
    lines = [line for line in stderr.splitlines() if "skipped" in line or str(records) in line]
    return lines


@pytest.mark.parametrize("command", ["report", "recommend", "site"])
def test_each_reader_names_the_skipped_lines_and_how_many(tmp_path, command):
    root, records = store(tmp_path / "store")
    args = {"report": ["report", str(root)], "recommend": ["recommend", "sdxl", str(root)],
            "site": ["site", str(root), "--out", str(tmp_path / "site")]}[command]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    first, second = damaged_lines(records)
    assert said(result.stderr, records) == [
        "gpubench: skipped 2 lines of 1 stored run (the rest of each run is read):",
        f"gpubench:   {records}:{first}: metrics.images_per_s.value = nan: input should be a finite number",
        f"gpubench:   {records}:{second}: metrics.images_per_s.value = nan: input should be a finite number",
    ]


def test_recommend_names_a_gpu_whose_results_were_all_skipped(tmp_path):
    root, _ = store(tmp_path / "store")
    result = CliRunner().invoke(cli, ["recommend", "sdxl", str(root)])
    assert result.exit_code == 0, result.output
    assert H100 not in [line.split("|")[2].strip() for line in result.stdout.splitlines() if line.startswith("| ")]
    assert f"- not ranked, no ok result with images_per_s: {H100}" in result.stdout.splitlines()


def test_compare_says_the_skipped_lines_the_same_way(tmp_path):
    root, records = store(tmp_path / "store")
    result = CliRunner().invoke(cli, ["compare", str(root / "h200-0"), str(root / "h100")])
    assert said(result.stderr, records)[0].startswith("gpubench: skipped 2 lines of 1 stored run")


def test_a_run_with_nothing_skipped_says_nothing(tmp_path):
    root, _ = store(tmp_path / "store")
    result = CliRunner().invoke(cli, ["report", str(root / "h200-0")])
    assert result.exit_code == 0 and "skipped" not in result.stderr


def test_a_cut_line_says_it_is_cut_and_many_are_counted_past_ten(tmp_path):
    from gpubench.results import stored_runs

    root, records = store(tmp_path / "store")
    lines = records.read_text().splitlines()
    records.write_text("\n".join([lines[0], *[lines[1][:30]] * 12, *lines[1:]]) + "\n")
    run = stored_runs.load(root / "h100")
    said_lines = stored_runs.skipped_lines([run])
    assert said_lines[0].startswith("skipped 14 lines of 1 stored run")
    assert said_lines[1].startswith(f"  {records}:2: not JSON (") and "cut short or edited" in said_lines[1]
    assert said_lines[-1] == f"  ... and 4 more lines of {root / 'h100'}"
    assert len(said_lines) == 1 + stored_runs.SKIPPED_SHOWN + 1


def test_recommend_with_every_result_unreadable_says_so_not_a_metric_nobody_gave(tmp_path):
    root = tmp_path / "store"
    records = write_run(root / "tc", "train-compile", H200, 3.5, DAY0,
                        {"eager-sdpa": [{"tokens_per_s": 9e4}, {"tokens_per_s": 9.1e4}]}, progress=1) / "results.jsonl"
    records.write_text(records.read_text().replace('"value":90000.0,', '"value":NaN,')
                       .replace('"value":91000.0,', '"value":NaN,'))
    result = CliRunner().invoke(cli, ["recommend", "train-compile", str(root)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith(
        ": no result of the 1 train-compile run has a metric to rank on: each failed, or its line was"
        " unreadable (named above)")
    assert "gpubench: skipped 2 lines of 1 stored run" in result.stderr and result.stdout == ""


def test_a_cost_basis_missing_from_the_runs_is_not_called_a_metric_given(tmp_path):
    root = tmp_path / "store"
    write_run(root / "tc", "train-compile", H200, 3.5, DAY0, {"eager-sdpa": [{"step_ms": 90.0}]}, progress=1)
    result = CliRunner().invoke(cli, ["recommend", "train-compile", str(root)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].endswith(
        ": tokens_per_s (train-compile's cost basis; give --metric): not in the train-compile runs; valid: step_ms")
