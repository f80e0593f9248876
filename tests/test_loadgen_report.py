"""`gpubench loadgen`'s run folders are read by `gpubench report` and `gpubench site` like a study's runs: one row per
load (u2, u4) with the load's headline figures, and a page of their own."""

import json

import streaming_server
from clirun import gpubench
from test_report_tables import table_rows

ARGS = ["--model", "m", "--requests", "12", "--input-tokens", "16", "--output-tokens", "8", "--ignore-eos"]


def test_report_and_site_read_loadgen_runs(tmp_path):
    with streaming_server.running(ttft_ms=20, token_ms=2) as url:
        for users in ("2", "4"):
            result = gpubench("loadgen", "--base-url", f"{url}/v1", *ARGS, "--users", users, "--price", "2",
                              cwd=tmp_path)
            assert result.code == 0, result.stderr[-2000:]
    measured = {}
    for folder in (tmp_path / "gpubench-results").iterdir():
        records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
        (res,) = [r for r in records if r["kind"] == "result"]
        measured[res["setup"]] = res["metrics"]

    report = gpubench("report", str(tmp_path / "gpubench-results"), cwd=tmp_path)
    assert report.code == 0, report.stderr
    assert "## loadgen: Load generator against an OpenAI-compatible server" in report.stdout
    rows = {row["setup"]: row for row in table_rows(report.stdout)}
    assert list(rows) == ["u2", "u4"]
    for setup, row in rows.items():
        assert row["status"] == "ok" and row["$/hour"] == "2"
        tokens_per_s = measured[setup]["output_tokens_per_s"]["value"]
        assert float(row["output_tokens_per_s (tokens/s)"]) == float(f"{tokens_per_s:.3g}")
        assert row["client_bound (flag)"] == "0" and row["usage_mismatches (requests)"] == "0"

    site = gpubench("site", str(tmp_path / "gpubench-results"), "--out", str(tmp_path / "site"), cwd=tmp_path)
    assert site.code == 0, site.stderr
    page = (tmp_path / "site" / "loadgen.html").read_text()
    assert "Load generator against an OpenAI-compatible server" in page and ">u4<" in page
    assert "loadgen.html" in (tmp_path / "site" / "index.html").read_text()


def test_an_unknown_workload_names_the_load_generator_among_the_valid(tmp_path):
    from test_report_tables import write_run

    write_run(tmp_path / "x", "NVIDIA L40S", 0.54, [("eager-sdpa", 1, 1)], workload="mystery")
    result = gpubench("report", str(tmp_path / "x"), cwd=tmp_path)
    assert result.code == 2 and "unknown workload 'mystery'" in result.stderr
    assert result.stderr.rstrip().endswith(", loadgen") and "vllm-serving" in result.stderr
