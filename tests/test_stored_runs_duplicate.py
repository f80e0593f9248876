"""A (setup, repeat) recorded twice in one run is not resolved silently: the later record is read, and every reader
warns with the file, the earlier line and the setup."""

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli.main import cli
from gpubench.results import stored_runs

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402


def twice(root: Path) -> tuple[Path, int, int]:
    """A run whose compile-b4 repeat 1 is written again at the end with another number (as an edit or a resumed
    copy would)."""
    folder = write_run(root / "h200", "sdxl", "NVIDIA H200", 3.5, datetime(2026, 11, 1, tzinfo=UTC),
                       {"compile-b4": [{"images_per_s": 7.0}, {"images_per_s": 7.1}]}, progress=1)
    records = folder / "results.jsonl"
    lines = records.read_text().splitlines()
    first = next(n for n, line in enumerate(lines, 1) if '"kind":"result"' in line and '"repeat":1' in line)
    lines.insert(len(lines) - 1, lines[first - 1].replace('"value":7.0', '"value":9.0'))
    records.write_text("\n".join(lines) + "\n")
    return folder, first, len(lines) - 1


def test_the_later_record_is_read_and_the_earlier_one_said(tmp_path):
    folder, first, again = twice(tmp_path)
    run = stored_runs.load(folder)
    assert sorted(r.metrics["images_per_s"].value for r in run.results) == [7.1, 9.0]
    said = f"compile-b4 repeat 1 is recorded again on line {again}, which is read"
    assert [(s.where, s.why) for s in run.skipped] == [(f"{folder / 'results.jsonl'}:{first}", said)]


@pytest.mark.parametrize("command", [["report", "{run}"], ["recommend", "sdxl", "{run}"],
                                     ["site", "{run}", "--out", "{tmp}/site"]])
def test_every_reader_warns_naming_the_file_and_the_setup(tmp_path, command):
    folder, first, again = twice(tmp_path)
    result = CliRunner().invoke(cli, [a.format(run=folder, tmp=tmp_path) for a in command])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[:2] == [
        "gpubench: skipped 1 line of 1 stored run (the rest of each run is read):",
        f"gpubench:   {folder / 'results.jsonl'}:{first}: compile-b4 repeat 1 is recorded again on line {again},"
        " which is read"]
