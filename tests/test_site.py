"""`gpubench site`: stored runs as a static site that opens offline, flags changes beyond noise, rebuilds only what
a new run touches, and renders in a real headless Chromium."""

import html
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clirun import gpubench

from gpubench.results import site

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

CHROMIUM = shutil.which("chromium")
DAY0 = datetime(2026, 11, 1, tzinfo=UTC)


def history(root, tokens_per_s, gpu="NVIDIA H100 80GB HBM3", price=2.5, workload="train-compile", name="h100",
            first_day=0):
    """One run a day of two setups, 3 repeats each with a 0.5% spread around the given tokens/s."""
    for day, tps in enumerate(tokens_per_s, first_day):
        values = {setup: [{"tokens_per_s": tps * scale * f, "step_ms": 8192 / (tps * scale * f) * 1000}
                          for f in (0.995, 1.0, 1.005)] for setup, scale in (("eager-sdpa", 1), ("compile-sdpa", 1.1))}
        write_run(root / f"{name}-{day:02d}", workload, gpu, price, DAY0 + timedelta(days=day), values, progress=3)


def changes(page: Path) -> list[dict]:
    """The rows of a study page's "Changes beyond noise" table."""
    text = page.read_text()
    section = text.split("<h2>Changes beyond noise")[1].split("<h2>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", section)
    if not rows:
        return []
    header = [html.unescape(c) for c in re.findall(r"<th>(.*?)</th>", rows[0])]
    return [dict(zip(header, [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)], strict=True))
            for row in rows[1:]]


def test_a_planted_20_percent_regression_is_flagged_and_a_2_percent_change_is_not(tmp_path):
    history(tmp_path / "store", [1000, 1001, 999, 980, 981, 785])  # day 3: -2%; day 5: -20%
    result = gpubench("site", str(tmp_path / "store"), "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    found = changes(tmp_path / "site" / "train-compile.html")
    flagged = {(row["setup"], row["metric"].split(" ")[0], row["verdict (noise: max(5%, 2 CV))"]) for row in found}
    assert flagged == {("eager-sdpa", "tokens_per_s", "worse"), ("eager-sdpa", "step_ms", "worse"),
                       ("compile-sdpa", "tokens_per_s", "worse"), ("compile-sdpa", "step_ms", "worse")}
    assert {row["when"] for row in found} == {"2026-11-06 00:00"}  # the 20% drop only, not the 2% on day 3
    assert {row["after/before"] for row in found if row["metric"].startswith("tokens_per_s")} == {"0.800"}
    index = (tmp_path / "site" / "index.html").read_text()
    assert "4 worse" in index  # the latest run against the one before: two setups' tokens_per_s and step_ms
    page = (tmp_path / "site" / "train-compile.html").read_text()
    assert len(re.findall(r"<img src='plots/[^']+\.png'", page)) == 1  # one series: one history plot


def test_runs_at_two_prices_are_two_rows_with_their_own_cost(tmp_path):
    history(tmp_path / "store", [1000, 1000], price=0.54, gpu="NVIDIA L40S", name="us")
    history(tmp_path / "store", [1000, 1000], price=1.15, gpu="NVIDIA L40S", name="eu")
    assert gpubench("site", str(tmp_path / "store"), "--out", str(tmp_path / "site"), cwd=tmp_path).code == 0
    page = (tmp_path / "site" / "train-compile.html").read_text()
    latest = page.split("<h2>Latest")[1].split("<h2>")[0]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in re.findall(r"<tr>(.*?)</tr>",
                                                                                                   latest)[1:]]
    eager = {row[0]: row for row in rows if row[2] == "eager-sdpa"}
    assert set(eager) == {"NVIDIA L40S ($0.54/h)", "NVIDIA L40S ($1.15/h)"}
    header = [html.unescape(c) for c in re.findall(r"<th>(.*?)</th>", latest)]
    cost = header.index("1M_tokens_per_usd (1M tokens/USD)")
    # 1000 tokens/s x 3600 / price / 1e6, each at its own price, with its own small spread (not "±24% (noisy)")
    assert eager["NVIDIA L40S ($0.54/h)"][cost] == "6.67 ±0%"
    assert eager["NVIDIA L40S ($1.15/h)"][cost] == "3.13 ±0%"
    assert "noisy" not in latest


def test_a_rebuild_reads_only_the_new_run_and_renders_only_what_it_touches(tmp_path):
    store, out = tmp_path / "store", tmp_path / "site"
    history(store, [1000, 1001, 999])
    history(store, [500, 501], gpu="NVIDIA L40S", price=0.86, name="l40s")
    history(store, [200, 201], workload="embed", name="embed")  # embed has no tokens_per_s: other metrics, still a page
    first = site.build([str(store)], out)
    assert len(first.read) == 7 and set(first.rendered) == {"train-compile.html", "embed.html", "index.html"}
    assert len(first.plots) == 3  # train-compile on two GPUs, embed on one

    again = site.build([str(store)], out)
    assert again.read == [] and again.rendered == [] and again.plots == []

    embed_page = (out / "embed.html").stat().st_mtime_ns
    history(store, [1200], first_day=3)  # one new H100 run, 20% faster
    new = store / "h100-03" / "results.jsonl"
    rebuilt = site.build([str(store)], out)
    assert rebuilt.read == [str(new.resolve())]
    assert set(rebuilt.rendered) == {"train-compile.html", "index.html"}
    assert len(rebuilt.plots) == 1  # the H100 series' history; the L40S plot is unchanged and not drawn again
    assert (out / "embed.html").stat().st_mtime_ns == embed_page
    assert (out / "runs" / f"{site.stored_runs.load(new.parent).started.run_id}" / "results.jsonl").is_file()

    shutil.rmtree(store / "l40s-01")  # a run removed from the store leaves the site too
    removed = site.build([str(store)], out)
    assert removed.read == [] and set(removed.rendered) == {"train-compile.html", "index.html"}
    # the L40S series is down to one run: one point per line is said, not drawn, and its old plot goes
    assert len(list((out / "runs").iterdir())) == 7 and len(list((out / "plots").iterdir())) == 2
    assert "One run with ok results: nothing to draw over time" in (out / "train-compile.html").read_text()


def test_a_run_that_finishes_later_is_read_again(tmp_path):
    store, out = tmp_path / "store", tmp_path / "site"
    history(store, [1000])
    records = store / "h100-00" / "results.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    records.write_text("".join(lines[:-1]))  # still running: no run_finished yet
    site.build([str(store)], out)
    assert "partial (no run_finished)" in (out / "train-compile.html").read_text()
    records.write_text("".join(lines))
    rebuilt = site.build([str(store)], out)
    assert rebuilt.read == [str(records.resolve())] and "partial" not in (out / "train-compile.html").read_text()


def test_the_site_is_offline_names_every_study_and_gpu_and_links_each_runs_files(tmp_path):
    history(tmp_path / "store", [1000, 1010])
    history(tmp_path / "store", [300], gpu="NVIDIA L40S", price=0.86, name="l40s")
    history(tmp_path / "store", [200, 190], workload="embed", gpu="NVIDIA H200", price=3.5, name="embed")
    out = tmp_path / "site"
    assert gpubench("site", str(tmp_path / "store"), "--out", str(out), cwd=tmp_path).code == 0
    pages = sorted(out.glob("*.html"))
    assert [p.name for p in pages] == ["embed.html", "index.html", "train-compile.html"]
    for page in pages:
        text = page.read_text()
        assert not re.search(r"(https?:)?//", text), page  # nothing to fetch from anywhere
        for target in re.findall(r"(?:src|href)='([^']+)'", text):
            assert (out / target).is_file(), (page.name, target)  # every link and picture is in the site
    index = (out / "index.html").read_text()
    for name in ("train-compile", "embed", "NVIDIA H100 80GB HBM3", "NVIDIA L40S", "NVIDIA H200"):
        assert name in index
    study = (out / "train-compile.html").read_text()
    assert "NVIDIA H100 80GB HBM3" in study and "NVIDIA L40S" in study
    run_links = re.findall(r"href='(runs/[^']+/)config\.json'", study)
    assert len(run_links) == 3
    for base in run_links:
        assert '"kind":"run_started"' in (out / base / "results.jsonl").read_text()
        assert '"platform": "synthetic"' in (out / base / "environment.json").read_text()
        assert '"synthetic": true' in (out / base / "config.json").read_text()


@pytest.mark.parametrize("case, says", [
    ("missing-source", "no such folder"),
    ("empty-source", "no gpubench runs there"),
    ("out-is-a-file", "is a file"),
    ("out-not-a-site", "not empty and not a gpubench site"),
    ("out-unwritable", "is not writable"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, case, says):
    history(tmp_path / "store", [1000])
    source, out = tmp_path / "store", tmp_path / "site"
    if case == "missing-source":
        source = tmp_path / "nope"
    elif case == "empty-source":
        source = tmp_path / "empty"
        source.mkdir()
    elif case == "out-is-a-file":
        out.write_text("x")
    elif case == "out-not-a-site":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "out-unwritable":
        out = Path("/proc/gpubench-site")  # not writable, even for root
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = gpubench("site", str(source), "--out", str(out), cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_site_from_an_s3_prefix_and_its_rebuild(tmp_path, s3, s3_bucket, s3_env):
    from gpubench.stores import deliver, parse_store

    history(tmp_path / "local", [1000, 1001])
    for folder in sorted((tmp_path / "local").iterdir()):
        ok, message = deliver(folder, parse_store(f"s3://{s3_bucket}/team"))
        assert ok, message
    out = tmp_path / "site"
    result = gpubench("site", f"s3://{s3_bucket}/team", "--out", str(out), cwd=tmp_path, env=s3.env())
    assert result.code == 0, result.stderr
    assert "read 2 runs" in result.stderr and (out / "train-compile.html").is_file()
    again = gpubench("site", f"s3://{s3_bucket}/team", "--out", str(out), cwd=tmp_path, env=s3.env())
    assert again.code == 0 and "read 0 runs, wrote 0 pages" in again.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (.ci/run installs Debian's chromium)")
@pytest.mark.parametrize("page", ["index.html", "train-compile.html"])
def test_chromium_renders_the_pages_into_pictures_that_are_not_blank(tmp_path, page):
    import matplotlib.image

    history(tmp_path / "store", [1000, 1001, 999, 800])
    out = tmp_path / "site"
    assert gpubench("site", str(tmp_path / "store"), "--out", str(out), cwd=tmp_path).code == 0
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,900",
                    (out / page).as_uri()], capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(shot)[:, :, :3]
    not_white = (pixels.sum(axis=2) < 2.9).mean()
    colours = len({tuple(p) for p in (pixels[::4, ::4] * 255).astype(int).reshape(-1, 3)})
    assert not_white > 0.01 and colours > 20, (not_white, colours)


def test_a_site_kept_inside_its_source_folder_is_not_read_as_runs(tmp_path):
    history(tmp_path / "store", [1000, 1001])
    out = tmp_path / "store" / "site"
    first = site.build([str(tmp_path / "store")], out)
    again = site.build([str(tmp_path / "store")], out)
    assert len(first.read) == 2 and again.read == [] and again.rendered == []


def test_the_site_of_the_stored_h200_runs_opens_offline(tmp_path):
    """The real H200 runs in benchmarks/results: every page and picture is local, every study there has a page."""
    import json

    results = Path(__file__).parents[1] / "benchmarks" / "results"
    out = tmp_path / "site"
    result = gpubench("site", str(results), "--out", str(out), cwd=tmp_path)
    assert result.code == 0, result.stderr
    workloads = {json.loads(line)["workload"] for f in results.rglob("results.jsonl")
                 for line in f.read_text().splitlines()[:1]}
    assert {p.stem for p in out.glob("*.html")} == workloads | {"index"}
    index = (out / "index.html").read_text()
    assert all(f"<a href='{w}.html'>" in index for w in workloads) and "NVIDIA H200" in index
    for page in out.glob("*.html"):
        text = page.read_text()
        for target in re.findall(r"(?:src|href)\s*=\s*['\"]([^'\"]+)", text):
            assert (out / target).is_file(), (page.name, target)  # nothing from the network: all in the site
    # an error's text may name a URL (the hub it could not reach); it is text in a cell, never fetched
    assert "url(" not in (out / "site.css").read_text() and "@import" not in (out / "site.css").read_text()


def test_smoke_runs_are_a_series_of_their_own_and_said_to_be_smoke(tmp_path):
    history(tmp_path / "store", [1000, 1001])
    write_run(tmp_path / "store" / "smoke", "train-compile", "cpu", None, DAY0 + timedelta(days=5),
              {"eager-sdpa": [{"tokens_per_s": 80.0}]}, progress=1, smoke=True)
    out = tmp_path / "site"
    assert gpubench("site", str(tmp_path / "store"), "--out", str(out), cwd=tmp_path).code == 0
    page = (out / "train-compile.html").read_text()
    assert "<h3>cpu (smoke)</h3>" in page and "ok (smoke run)" in page and "they test the code path" in page
    assert "(smoke runs)" in (out / "index.html").read_text()
    assert not changes(out / "train-compile.html")  # 80 tokens/s on a CPU is no regression of the H100's 1000
