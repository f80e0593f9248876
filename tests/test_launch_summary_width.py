"""The launcher's tables keep a run id whole on a 100-column terminal: the id is what a person copies into
`gpubench-launch status RUN`, so the other columns fold before it does."""

from __future__ import annotations

import io

from rich.console import Console

from gpubench.launcher.progress import ProgressView
from gpubench.launcher.results import RunOutcome

RUN_ID = "train-compile-20261203T211500Z-8f3a2c"


def rendered(width: int, render) -> str:
    view = ProgressView()
    view.console = Console(file=io.StringIO(), width=width, force_terminal=False, highlight=False)
    render(view)
    return view.console.file.getvalue()


def test_the_summary_keeps_the_run_id_on_one_line_at_100_columns():
    outcome = RunOutcome(run_id=RUN_ID, exit_code=3, status="failed: exit code 1 after the job's own retries",
                         gpu="RTX5090 (spot)", region="us-east-1", cost_usd=0.01234, duration_s=612,
                         setups_ok=1, setups_total=4,
                         setups=[{"setup": "eager-sdpa", "status": "ok", "metrics": "step_ms=160.2 ms"}])
    text = rendered(100, lambda view: view.summary([outcome]))
    assert max(len(line) for line in text.splitlines()) <= 100
    assert sum(RUN_ID in line for line in text.splitlines()) == 2, text  # the summary's row and the results' row


def test_the_live_table_keeps_the_run_id_on_one_line_at_100_columns():
    def live(view):
        view.add(RUN_ID, "RTX5090")
        view.update(RUN_ID, status="running", phase="timed", metrics="step_ms=160.2 ms, tokens_per_s=102,300")
        view.console.print(view._table())

    text = rendered(100, live)
    assert any(RUN_ID in line for line in text.splitlines()), text
