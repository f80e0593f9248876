"""The verdict in `gpubench report` and `gpubench compare`, read from two stored H200 runs of finetune
(2026-12-01): lora-mb4 host-bound in both; lora-tuned eager in the first, as CUDA graphs in the second."""

from pathlib import Path

from clirun import gpubench

from gpubench.results import report, stored_runs

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results" / "h200-2026-12-01"
EAGER = next((RESULTS / "bounds-d" / "finetune" / "runs").iterdir())
GRAPHS = next((RESULTS / "bounds-e" / "finetune" / "runs").iterdir())


def test_report_table_has_a_verdict_per_row():
    built = report.build([stored_runs.load(EAGER), stored_runs.load(GRAPHS)])
    header, rows = report.table(built[0])
    assert header[-1] == "verdict"
    verdicts = {(row[0], row[2]): row[-1] for row in rows}
    assert set(verdicts.values()) == {"host-bound", "undetermined"}
    assert sum(v == "host-bound" for v in verdicts.values()) == 3  # lora-mb4 twice, eager lora-tuned once


def test_compare_shows_what_bounded_each_setup_in_each_run(tmp_path):
    result = gpubench("compare", str(EAGER), str(GRAPHS), cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert "| setup | bound by (A) | bound by (B) |" in result.stdout
    assert "| lora-mb4 | host-bound | host-bound |" in result.stdout
    assert "| lora-tuned | host-bound | undetermined |" in result.stdout
