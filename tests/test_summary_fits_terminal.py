"""The end-of-run table on a terminal fits its width (issue 34: up to 278 columns, 481 for the stored H200
vllm-serving run): the columns that fit side by side, the rest in blocks below, each led by the setup; every figure
still shown. A log or a pipe keeps the markdown (summary.md always does)."""

from pathlib import Path

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.results import stored_runs, summary, verdict
from gpubench.workload import load

STORED = Path(__file__).parents[1] / "benchmarks" / "results" / "h200-2026-12-02"


@pytest.fixture(scope="module")
def wide_table():
    run = next(r for r in stored_runs.discover([str(STORED)]) if r.workload == "vllm-serving" and r.finished)
    spec = WORKLOADS.get(run.workload)
    header, rows = summary.table(spec, load(spec), run.finished.summary, verdict.per_setup(run.results),
                                 summary.energy_per_setup(run.results))
    assert len(summary.markdown(header, rows, []).splitlines()[0]) > 400  # the problem: one line per row, that wide
    return header, rows


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_every_line_fits_and_every_figure_is_shown(wide_table, width):
    header, rows = wide_table
    text = summary.fitted(header, rows, ["spread over 5% (noisy, treat differences as within noise): c1"], width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    assert lines[0].startswith("> spread over 5%")  # the notes first, as in the markdown
    cells = {cell for row in rows for cell in row if cell and len(cell) < width // 3}
    shown = text.replace("\n", " ")
    assert all(cell in shown for cell in cells)
    assert sum(line.split()[:1] == ["setup"] for line in lines) >= 2  # the rest in blocks below, each led by setup

def test_a_table_that_fits_is_one_block(wide_table):
    header, rows = wide_table
    text = summary.fitted(header[:4], [row[:4] for row in rows], [], 100)
    assert sum(line.split()[:1] == ["setup"] for line in text.splitlines()) == 1
    assert [line.split()[0] for line in text.splitlines()[2:]] == [row[0] for row in rows]
