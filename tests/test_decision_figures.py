"""What a person reads names each GPU with the figure it is named for: the site's index and the report (markdown and
HTML) say which GPU is cheapest per unit at what price, which is fastest at what rate, which uses the least energy at
how many joules; a store of smoke runs says so on that line too."""

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from gpubench.cli.main import cli
from gpubench.results import site

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
H200, L40S = "NVIDIA H200", "NVIDIA L40S"
# $3.50/h at 7 images/s: $0.139 per 1k images, 400 J/image; $0.86/h at 1 image/s: $0.239 per 1k images, 300 J/image
LINE = (f"cheapest per unit: {H200} (compile-b4) at $0.139 per 1k images; fastest: {H200} (compile-b4) at 7 images/s;"
        f" least energy: {L40S} (compile-b4) at 300 J/image")


def store(root: Path, smoke: bool = False) -> Path:
    for day, (gpu, price, rate, joules) in enumerate([(H200, 3.5, 7.0, 400.0), (L40S, 0.86, 1.0, 300.0)]):
        write_run(root / f"sdxl-{day}", "sdxl", gpu, price, DAY0 + timedelta(days=day), {"compile-b4": [
            {"images_per_s": rate * f, "j_per_image": joules} for f in (0.99, 1.0, 1.01)]}, progress=1, smoke=smoke)
    return root


def test_the_report_names_the_cheapest_gpu_with_its_price_per_unit(tmp_path):
    html = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", str(store(tmp_path / "store")), "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert f"Which GPU (gpubench recommend, stored prices): {LINE}" in result.stdout.splitlines()
    assert f"<b>Which GPU (gpubench recommend, stored prices):</b> {LINE}" in html.read_text()


def test_the_site_index_names_each_gpu_with_its_figure(tmp_path):
    out = tmp_path / "site"
    site.build([str(store(tmp_path / "store"))], out)
    index = (out / "index.html").read_text()
    assert LINE in index and LINE in (out / "sdxl.html").read_text()
    header = re.findall(r"<th>(.*?)</th>", index)
    assert header[:3] == ["study", "title", "which GPU: cheapest per unit; fastest; least energy (stored prices)"]

def test_a_smoke_store_says_smoke_on_its_which_gpu_line(tmp_path):
    out = tmp_path / "site"
    site.build([str(store(tmp_path / "store", smoke=True))], out)
    row = (out / "index.html").read_text().split("<a href='sdxl.html'>")[1].split("</tr>")[0]
    assert f"--smoke runs only, not a benchmark: {LINE}" in row
    result = CliRunner().invoke(cli, ["recommend", "sdxl", str(tmp_path / "store")])
    assert f"- --smoke runs only, not a benchmark: {LINE}" in result.stdout.splitlines()
