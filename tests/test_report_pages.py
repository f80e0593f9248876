"""The HTML report and the site read well at 1,400 px: wide tables scroll inside the page instead of being cut, a
setup that did not run is one line with its whole reason, a long report has a table of contents, and a plot with one
point is said in words instead of drawn. The layout is measured in a real headless Chromium."""

import html
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clirun import gpubench
from test_report_tables import write_results

from gpubench.schema import SetupResult, to_line

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

CHROMIUM = shutil.which("chromium")
REASON = ("no Hugging Face hub reachable from this machine (HF_HUB_OFFLINE=1) and no local copy of "
          "stabilityai/stable-diffusion-xl-base-1.0 under /cache/huggingface: run it where the hub is reachable, or "
          "pre-fetch the weights with gpubench-launch weights")


def with_skipped(folder: Path, setup: str, reason: str) -> None:
    """Add a skipped result (and its setup) to a stored run."""
    lines = (folder / "results.jsonl").read_text().splitlines()
    started = json.loads(lines[0])
    started["setups"].append(setup)
    skipped = SetupResult(run_id=started["run_id"], setup=setup, repeat=1, status="skipped", error=reason)
    (folder / "results.jsonl").write_text("\n".join([json.dumps(started), *lines[1:-1], to_line(skipped),
                                                     lines[-1]]) + "\n")


def store(root: Path) -> Path:
    write_results(root / "tc", "NVIDIA H200", {"eager-sdpa": [{"tokens_per_s": 90000.0, "step_ms": 91.0}]}, price=3.5)
    write_results(root / "sdxl", "NVIDIA H200", {"compile-b4": [{"images_per_s": 7.0}]}, price=3.5, workload="sdxl")
    with_skipped(root / "sdxl", "eager-b1", REASON)
    write_results(root / "serving", "NVIDIA H200", {"c1": [{"per_user_tokens_per_s": 120.0,
                                                            "output_tokens_per_s": 118.0}]},
                  price=3.5, workload="vllm-serving")
    return root


def test_a_skipped_setup_is_one_line_with_its_whole_reason_and_the_report_has_contents(tmp_path):
    page = tmp_path / "report.html"
    result = gpubench("report", str(store(tmp_path / "runs")), "--html", str(page), cwd=tmp_path)
    assert result.code == 0, result.stderr
    text = page.read_text()
    row = re.search(r"<tr><td>NVIDIA H200</td><td>3.5</td><td>eager-b1</td><td class='reason' colspan='(\d+)'>"
                    r"<div>(.*?)</div></td></tr>", text)
    assert row is not None, text
    assert row.group(2) == f"skipped: {REASON}"  # whole: the markdown table shortens it to 120 characters
    header = re.search(r"<h2 id='sdxl'>.*?<tr>(.*?)</tr>", text, re.S).group(1)
    assert int(row.group(1)) == header.count("<th>") - 3  # across every column after GPU, $/hour and setup
    nav = text.split("<nav>")[1].split("</nav>")[0]
    listed = re.findall(r"href='#([\w-]+)'", nav)
    assert sorted(listed) == ["sdxl", "train-compile", "vllm-serving"]
    assert listed == re.findall(r"<h2 id='([\w-]+)'>", text)  # in the page's order, each to its study
    # one load level: no trade-off curve drawn, its one point said
    assert ("vllm-serving: throughput against per-user speed: one load level only (NVIDIA H200 c1: 118 output"
            " tokens/s at 120 tokens/s per user), no curve to draw") in text


def test_a_site_page_with_one_run_says_its_history_is_one_point(tmp_path):
    out = tmp_path / "site"
    write_run(tmp_path / "store" / "one", "train-compile", "NVIDIA H200", 3.5, datetime(2026, 11, 1, tzinfo=UTC),
              {"eager-sdpa": [{"tokens_per_s": 9e4}] * 3}, progress=1)
    assert gpubench("site", str(tmp_path / "store"), "--out", str(out), cwd=tmp_path).code == 0
    page = (out / "train-compile.html").read_text()
    assert "One run with ok results: nothing to draw over time" in page and "<img" not in page


MEASURE = """<script>
const boxes = [...document.querySelectorAll('table')].map(t => {
  const box = t.parentElement.getBoundingClientRect(); return {right: box.right, table: t.scrollWidth,
  shown: t.parentElement.clientWidth, scrolls: getComputedStyle(t.parentElement).overflowX};});
document.body.setAttribute('data-layout', JSON.stringify({width: window.innerWidth, boxes}));
</script></body>"""


def layout(tmp_path: Path, page: Path) -> dict:
    """The page laid out by Chromium at 1,400 px: each table's box, the width it needs and the width it has."""
    probe = page.with_name("probe-" + page.name)
    probe.write_text(page.read_text().replace("</body>", MEASURE))
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.search(r"data-layout=\"([^\"]+)\"", dom)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (.ci/run installs Debian's chromium)")
@pytest.mark.parametrize("kind", ["report", "site"])
def test_wide_tables_scroll_inside_a_1400_px_page_instead_of_being_cut(tmp_path, kind):
    runs = store(tmp_path / "runs")
    from gpubench.workloads import vllm_serving

    every = {name: 1234.5 for name in vllm_serving.HEADLINE}  # each of the study's columns, wide numbers
    write_results(runs / "serving-wide", "NVIDIA H200 141GB HBM3e (a long name)", {"c8": [every], "c64": [every]},
                  price=3.5, workload="vllm-serving")
    if kind == "report":
        page = tmp_path / "report.html"
        assert gpubench("report", str(runs), "--html", str(page), cwd=tmp_path).code == 0
    else:
        assert gpubench("site", str(runs), "--out", str(tmp_path / "site"), cwd=tmp_path).code == 0
        page = tmp_path / "site" / "vllm-serving.html"
    measured = layout(tmp_path, page)
    assert measured["width"] == 1400 and measured["boxes"]
    for box in measured["boxes"]:
        assert box["right"] <= measured["width"], box  # nothing drawn past the window's edge
        if box["table"] > box["shown"]:  # wider than the page: it scrolls in its own box
            assert box["scrolls"] == "auto", box
    assert any(box["table"] > box["shown"] for box in measured["boxes"])  # the case that was cut


def test_the_serving_curve_and_table_say_which_latency_target_they_used(tmp_path):
    config = {"slo_ttft_p99_ms": 500.0, "slo_tpot_p99_ms": 30.0}
    levels = {"c1": (105, 104, 1), "c8": (87, 690, 1), "c64": (20, 1300, 0)}  # per-user, total, met the target
    write_results(tmp_path / "runs" / "serving", "NVIDIA H200", {
        setup: [{"per_user_tokens_per_s": user, "output_tokens_per_s": total, "slo_met": met}]
        for setup, (user, total, met) in levels.items()}, price=3.5, workload="vllm-serving", config=config)
    page = tmp_path / "report.html"
    result = gpubench("report", str(tmp_path / "runs"), "--html", str(page), cwd=tmp_path)
    assert result.code == 0, result.stderr
    said = ("Latency target: p99 TTFT <= 500 ms and p99 TPOT <= 30 ms (MLPerf Inference Llama-3.1-8B Interactive)"
            " (config slo_ttft_p99_ms, slo_tpot_p99_ms)")
    assert said in result.stdout and said in html.unescape(page.read_text())
    assert "alt='vllm-serving: throughput against per-user speed'" in page.read_text()
