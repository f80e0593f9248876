"""The HTML report: plots embedded, rendered by a real headless Chromium into a picture that is not blank."""

import base64
import re
import shutil
import subprocess

import pytest
from clirun import gpubench
from test_report_tables import write_run

from gpubench.results.report_html import pareto_front
from gpubench.schema import Environment, GpuInfo, Metric, RunStarted, SetupResult, to_line

CHROMIUM = shutil.which("chromium")


def write_serving_run(folder, gpu, points):
    """A vllm-serving run: {setup: (per-user tokens/s, output tokens/s)}."""
    run_id = "vllm-serving-20261130T000000Z-" + folder.name[-6:].rjust(6, "0")
    folder.mkdir(parents=True)
    env = Environment(python="3.12", platform="linux", gpus=[GpuInfo(name=gpu)])
    records = [RunStarted(run_id=run_id, workload="vllm-serving", study="s", setups=list(points), repeats=1,
                          smoke=False, config={}, environment=env, price_usd_per_hour=1.14)]
    records += [SetupResult(run_id=run_id, setup=setup, repeat=1, status="ok", metrics={
        "per_user_tokens_per_s": Metric(value=user, unit="tokens/s", better="higher"),
        "output_tokens_per_s": Metric(value=total, unit="tokens/s", better="higher")})
        for setup, (user, total) in points.items()]
    (folder / "results.jsonl").write_text("".join(to_line(r) + "\n" for r in records))


def test_the_pareto_front_keeps_only_points_nothing_beats_on_both_axes():
    points = [(105, 104), (100, 776), (87, 2566), (79, 4515), (40, 1727), (80, 100)]
    assert pareto_front(points) == [(79, 4515), (87, 2566), (100, 776), (105, 104)]


def test_the_page_embeds_its_plots_and_needs_no_network(tmp_path):
    write_run(tmp_path / "runs" / "a", "NVIDIA L40S", 0.54, [("eager-sdpa", 33581, 100), ("compile-sdpa", 34691, 110)])
    write_serving_run(tmp_path / "runs" / "b", "NVIDIA L40S", {"c1": (49, 48), "c8": (45, 354), "c64": (33, 1887)})
    page = tmp_path / "report.html"
    result = gpubench("report", str(tmp_path / "runs"), "--html", str(page), cwd=tmp_path)
    assert result.code == 0, result.stderr
    html = page.read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", html)
    # train-compile: throughput, cost and ... ; vllm-serving: its cost basis, cost, the trade-off curve
    assert len(images) >= 4 and all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert "http://" not in html and "https://" not in html
    assert "<td>vllm-serving</td>" not in html and "<h2 id='vllm-serving'>vllm-serving: " in html


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (.ci/run installs Debian's chromium)")
def test_chromium_renders_the_report_into_a_picture_with_tables_and_plots(tmp_path):
    import matplotlib.image

    write_run(tmp_path / "runs" / "a", "NVIDIA H100 PCIe", 3.86, [("eager-sdpa", 54022, 378)])
    page = tmp_path / "report.html"
    assert gpubench("report", str(tmp_path / "runs"), "--html", str(page), cwd=tmp_path).code == 0
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1000",
                    page.as_uri()], capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(shot)[:, :, :3]
    not_white = (pixels.sum(axis=2) < 2.9).mean()
    colored = (abs(pixels[:, :, 0] - pixels[:, :, 2]) > 0.3).mean()  # the bars are blue, text is grey
    assert not_white > 0.02 and colored > 0.005, (not_white, colored)
