"""DDP scaling: tokens/s and efficiency against GPU count (from each setup's recipe), with linear scaling drawn."""

import base64
import re

from clirun import gpubench
from test_report_tables import write_results

from gpubench import report, stored

DDP = {  # setup: tokens/s, scaling efficiency (as derive() merges it)
    "allreduce-2gpu": {"busbw_median_gbps": 20.0},
    "124m-1gpu": {"tokens_per_s": 100_000, "scaling_efficiency_pct": 100},
    "124m-2gpu": {"tokens_per_s": 150_000, "scaling_efficiency_pct": 75},
    "124m-4gpu": {"tokens_per_s": 200_000, "scaling_efficiency_pct": 50},
    "124m-4gpu-both": {"tokens_per_s": 360_000, "scaling_efficiency_pct": 90},
    "355m-1gpu": {"tokens_per_s": 40_000, "scaling_efficiency_pct": 100},
    "355m-4gpu": {"tokens_per_s": 100_000, "scaling_efficiency_pct": 62.5},
}
PLOT = "ddp-scaling: tokens/s and scaling efficiency against GPUs"


def test_scaling_lines_take_gpu_counts_from_the_recipes(tmp_path):
    write_results(tmp_path / "runs" / "a", "NVIDIA H200", {s: [m] for s, m in DDP.items()}, workload="ddp-scaling")
    (built,) = report.build(stored.discover([str(tmp_path / "runs")]))
    lines = {line.size: line for line in report.scaling_lines(built)}
    assert set(lines) == {"124m", "355m"}  # the all-reduce test has no model: not a scaling line
    small = lines["124m"]
    assert [(p.gpus, p.row.setup) for p in small.plain] == [(1, "124m-1gpu"), (2, "124m-2gpu"), (4, "124m-4gpu")]
    assert [(p.gpus, p.row.setup) for p in small.variants] == [(4, "124m-4gpu-both")]
    assert small.ideal(4) == 400_000 and lines["355m"].ideal(2) == 80_000  # the 1-GPU rate times the GPUs


def test_the_page_has_the_scaling_plot_only_when_there_are_ddp_results(tmp_path):
    write_results(tmp_path / "train" / "a", "NVIDIA H200", {"eager-sdpa": [{"step_ms": 92, "tokens_per_s": 89_000}]})
    without = tmp_path / "without.html"
    assert gpubench("report", str(tmp_path / "train"), "--html", str(without), cwd=tmp_path).code == 0
    assert "against GPUs" not in without.read_text()

    write_results(tmp_path / "train" / "b", "NVIDIA H200", {s: [m] for s, m in DDP.items()}, workload="ddp-scaling")
    page = tmp_path / "with.html"
    result = gpubench("report", str(tmp_path / "train"), "--html", str(page), cwd=tmp_path)
    assert result.code == 0, result.stderr
    found = re.search(rf"<img alt='{PLOT}' title='[^']*' src='data:image/png;base64,([^']+)'>", page.read_text())
    assert found and base64.b64decode(found.group(1))[:8] == b"\x89PNG\r\n\x1a\n"
