"""A results.jsonl that starts with a UTF-8 byte-order mark (an editor saved it) is read as the run it is, by every
reader: the mark is no damage, and no record is skipped."""

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli.main import cli
from gpubench.results import stored_runs

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

BOM = "\ufeff"


def with_bom(root: Path) -> Path:
    folder = write_run(root / "h200", "sdxl", "NVIDIA H200", 3.5, datetime(2026, 11, 1, tzinfo=UTC),
                       {"compile-b4": [{"images_per_s": 7.0}, {"images_per_s": 7.1}]}, progress=1)
    records = folder / "results.jsonl"
    records.write_bytes(BOM.encode() + records.read_bytes())
    assert records.read_bytes().startswith(b"\xef\xbb\xbf")
    return folder


def test_load_reads_a_run_that_starts_with_a_byte_order_mark(tmp_path):
    run = stored_runs.load(with_bom(tmp_path))
    assert run.workload == "sdxl" and len(run.results) == 2 and run.finished is not None and run.skipped == []


@pytest.mark.parametrize("command", [["report", "{run}"], ["recommend", "sdxl", "{run}"],
                                     ["site", "{run}", "--out", "{tmp}/site"]])
def test_every_reader_reads_it(tmp_path, command):
    folder = with_bom(tmp_path)
    result = CliRunner().invoke(cli, [a.format(run=folder, tmp=tmp_path) for a in command])
    assert result.exit_code == 0, result.output
    assert "not a gpubench run" not in result.output and "skipped" not in result.stderr
