"""The site never says "within noise" where nothing was compared: one run is "nothing to compare", and a change
between runs of one repeat each is shown as the change with "no verdict (n=1)"."""

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpubench.results import site

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
H200 = "NVIDIA H200"


def build(tmp_path) -> Path:
    store = tmp_path / "store"
    # train-compile twice on the H200, one repeat each, 148x apart (6.71 ms, then 992 ms per step)
    for day, step_ms in enumerate((6.71, 992.0)):
        write_run(store / f"tc-{day}", "train-compile", H200, 3.5, DAY0 + timedelta(days=day),
                  {"compile-sdpa": [{"step_ms": step_ms, "tokens_per_s": 8192 / step_ms * 1000}]}, progress=1)
    # sdxl once, and embed once on two GPUs: nothing compared anywhere
    write_run(store / "sdxl", "sdxl", H200, 3.5, DAY0, {"compile-b4": [{"images_per_s": 3.0}]}, progress=1)
    for gpu in (H200, "NVIDIA L40S"):
        write_run(store / f"embed-{gpu[-4:]}", "embed", gpu, 1.0, DAY0, {"baseline": [{"passages_per_s": 900.0}]},
                  progress=1)
    out = tmp_path / "site"
    site.build([str(store)], out)
    return out


def index_cells(out: Path) -> dict[str, str]:
    import re

    rows = re.findall(r"<tr><td[^>]*><a href='([\w-]+)\.html'>.*?</tr>", (out / "index.html").read_text())
    text = (out / "index.html").read_text()
    return {name: text.split(f"<a href='{name}.html'>")[1].split("</tr>")[0] for name in rows}


def test_one_run_is_nothing_to_compare_on_the_index_and_its_page(tmp_path):
    out = build(tmp_path)
    cells = index_cells(out)
    assert "one run: nothing to compare" in cells["sdxl"] and "within noise" not in cells["sdxl"]
    assert "one run per series: nothing to compare" in cells["embed"] and "within noise" not in cells["embed"]
    page = (out / "sdxl.html").read_text()
    assert "One run: nothing to compare." in page and "within noise of the one before" not in page


def test_two_single_repeat_runs_148x_apart_are_a_change_with_no_verdict(tmp_path):
    out = build(tmp_path)
    cell = index_cells(out)["train-compile"]
    assert "within noise" not in cell
    assert "2 no verdict (n=1), widest compile-sdpa tokens_per_s 1,220,864 -&gt; 8,258 tokens/s" in cell
    page = (out / "train-compile.html").read_text()
    section = page.split("<h2>Changes beyond noise")[1].split("<h2>")[0]
    assert "<td class='num'>6.71</td><td class='num'>992</td><td class='num'>147.839</td>" in section
    assert section.count("no verdict (n=1)") == 2  # step_ms and tokens_per_s, each shown as the change


def test_the_index_names_the_cheapest_gpu_per_study(tmp_path):
    store = tmp_path / "store"
    for day, (gpu, price, rate) in enumerate([(H200, 3.5, 7.0), ("NVIDIA L40S", 0.86, 1.0)]):
        write_run(store / f"sdxl-{day}", "sdxl", gpu, price, DAY0 + timedelta(days=day),
                  {"compile-b4": [{"images_per_s": rate * f} for f in (0.99, 1.0, 1.01)]}, progress=1)
    out = tmp_path / "site"
    site.build([str(store)], out)
    # $0.139 per 1k images on the H200 against $0.239 on the L40S
    cell = index_cells(out)["sdxl"]
    assert (f"cheapest per unit: {H200} (compile-b4) at $0.139 per 1k images; fastest: {H200} (compile-b4) at"
            " 7 images/s; least energy: -") in cell
    assert f"cheapest per unit: {H200} (compile-b4)" in (out / "sdxl.html").read_text()
