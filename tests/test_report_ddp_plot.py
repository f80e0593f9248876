"""DDP scaling: tokens/s and efficiency against GPU count (from each setup's recipe), with linear scaling drawn."""

import base64
import re

from clirun import gpubench
from test_report_tables import write_results

from gpubench.results import report, stored_runs

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
    (built,) = report.build(stored_runs.discover([str(tmp_path / "runs")]))
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


def test_the_scaling_plot_keeps_its_labels_inside_and_apart(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.text import Text

    from gpubench.results.report_html import scaling_figure

    crowded = DDP | {"124m-4gpu-bf16": {"tokens_per_s": 350_000, "scaling_efficiency_pct": 87.5},
                     "124m-4gpu-accum4": {"tokens_per_s": 355_000, "scaling_efficiency_pct": 88.8}}
    write_results(tmp_path / "a", "NVIDIA H200", {s: [m] for s, m in crowded.items()}, workload="ddp-scaling")
    write_results(tmp_path / "b", "NVIDIA L40S", {s: [m] for s, m in crowded.items()}, workload="ddp-scaling")
    (built,) = report.build(stored_runs.discover([str(tmp_path)]))
    fig = scaling_figure(built, report.scaling_lines(built))
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    page = fig.bbox
    drawn_ticks = {label for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for tick in axis._update_ticks()
                   for label in (tick.label1, tick.label2)}  # a tick outside the view keeps a label it never draws
    tick_labels = {label for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for tick in axis.get_major_ticks()
                   for label in (tick.label1, tick.label2)}
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and (t not in tick_labels or t in drawn_ticks)]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    assert any("124m-4gpu-both" in text for text, _ in boxes)  # every fix is named (in the legend)
    for text, box in boxes:
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, text
    for i, (text, box) in enumerate(boxes):
        for other, other_box in boxes[i + 1:]:
            assert not box.overlaps(other_box), (text, other)
