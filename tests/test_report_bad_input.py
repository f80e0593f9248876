"""`gpubench report` and `compare` refuse bad paths with one line and exit 2, and write nothing: an --html
target whose folder is missing or cannot be written is found before anything is printed."""

from __future__ import annotations

import pytest
from clirun import gpubench


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    result = gpubench("run", "first-matmul", "--smoke", "--results-dir", str(root / "results"), cwd=root)
    assert result.code == 0, result.stderr
    [folder] = (root / "results").iterdir()
    return folder


def one_line_exit_2(result, says: str) -> None:
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: ") and says in line, line
    assert result.stdout == ""


@pytest.mark.parametrize("target, says", [
    ("/proc/nope/x.html", "--html /proc/nope/x.html: no folder /proc/nope"),
    ("/proc/x.html", "--html /proc/x.html: "),  # the folder exists, but no file can be made there
    ("missing/x.html", "--html missing/x.html: no folder missing"),
])
def test_report_html_target_that_cannot_be_written(run_folder, tmp_path, target, says):
    one_line_exit_2(gpubench("report", str(run_folder), "--html", target, cwd=tmp_path), says)
    assert list(tmp_path.iterdir()) == []


def test_report_html_into_a_good_folder_is_written(run_folder, tmp_path):
    result = gpubench("report", str(run_folder), "--html", "page.html", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert (tmp_path / "page.html").read_text().startswith("<!doctype html>")
    assert "first-matmul" in result.stdout  # the tables, printed once the page is written


@pytest.mark.parametrize("args, says", [
    (["report", "/nonexistent"], "/nonexistent: no such folder"),
    (["compare", "/nonexistent", "{run}"], "/nonexistent: not a gpubench run"),
    (["compare", "{run}", "{tmp}"], "not a gpubench run"),
])
def test_bad_run_paths(run_folder, tmp_path, args, says):
    args = [a.format(run=run_folder, tmp=tmp_path) for a in args]
    one_line_exit_2(gpubench(*args, cwd=tmp_path), says)
    assert list(tmp_path.iterdir()) == []
