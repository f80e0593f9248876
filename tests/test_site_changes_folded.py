"""A study page's "Changes beyond noise" shows the changes that are beyond noise; the changes between runs of one
repeat each (no spread, no verdict) fold into one line that opens to list them, instead of burying the verdicts
(issue 34: 178 "no verdict (n=1)" rows on the H200 vllm-serving page)."""

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpubench.results import site

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)


def section(tmp_path) -> str:
    store = tmp_path / "store"
    # the H100: two runs of 3 repeats, 20% apart (worse beyond noise); the L40S: two runs of one repeat, 30% apart
    for day, tps in enumerate((1000.0, 800.0)):
        write_run(store / f"h100-{day}", "train-compile", "NVIDIA H100 80GB HBM3", 2.5, DAY0 + timedelta(days=day),
                  {"eager-sdpa": [{"tokens_per_s": tps * f} for f in (0.995, 1.0, 1.005)]}, progress=1)
        write_run(store / f"l40s-{day}", "train-compile", "NVIDIA L40S", 0.86, DAY0 + timedelta(days=day),
                  {"eager-sdpa": [{"tokens_per_s": 300.0 * (1 + 0.3 * day)}],
                   "compile-sdpa": [{"tokens_per_s": 330.0 * (1 + 0.3 * day)}]}, progress=1)
    site.build([str(store)], tmp_path / "site")
    page = (tmp_path / "site" / "train-compile.html").read_text()
    return page.split("<h2>Changes beyond noise")[1].split("<h2>")[0]


def test_changes_beyond_noise_are_shown_and_the_unjudged_fold_into_one_line(tmp_path):
    found = section(tmp_path)
    shown, _, folded = found.partition("<details>")
    assert "worse" in shown and "NVIDIA H100" in shown
    assert "no verdict" not in shown and "NVIDIA L40S" not in shown
    assert re.search(r"<summary>2 changes between single runs: no verdict \(one repeat on a side, no spread to judge"
                     r" by; open to list them\)</summary>", folded)
    assert folded.count("<td class='no'>no verdict (n=1)</td>") == 2 and "NVIDIA L40S" in folded
