"""`gpubench loadgen` against a local server: records like a run, a run folder, cost, failures, bad input."""

import json

import pytest
import streaming_server
from clirun import gpubench

ARGS = ["--model", "m", "--users", "4", "--requests", "12", "--input-tokens", "16", "--output-tokens", "8",
        "--ignore-eos"]


def test_loadgen_prints_run_records_and_writes_a_run_folder(tmp_path):
    with streaming_server.running(ttft_ms=20, token_ms=2) as url:
        result = gpubench("loadgen", "--base-url", f"{url}/v1", *ARGS, "--price", "3.55", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    records = result.records()
    assert [r["kind"] for r in records][0] == "run_started" and records[-1]["kind"] == "run_finished"
    started, finished = records[0], records[-1]
    assert started["workload"] == "loadgen" and started["setups"] == ["u4"]
    assert started["config"]["users"] == 4 and started["config"]["ignore_eos"] is True
    (res,) = [r for r in records if r["kind"] == "result"]
    m = {k: v["value"] for k, v in res["metrics"].items()}
    assert res["status"] == "ok" and m["requests_ok"] == 12 and m["completion_tokens_mean"] == 8
    assert res["metrics"]["ttft_ms_p99"]["unit"] == "ms" and res["metrics"]["ttft_ms_p99"]["better"] == "lower"
    # $ per 1M output tokens = price / (output tokens/s x 3600) x 1e6, as the posts define it
    assert m["usd_per_1M_output_tokens"] == pytest.approx(3.55 / (m["output_tokens_per_s"] * 3600) * 1e6)
    assert res["info"]["errors_by_kind"] == {}
    assert finished["status"] == "ok" and finished["summary"][0]["setup"] == "u4"
    folder = tmp_path / "gpubench-results" / started["run_id"]
    assert [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()] == \
        [r["kind"] for r in records]
    config = json.loads((folder / "config.json").read_text())
    assert config["workload"] == "loadgen" and config["price_usd_per_hour"] == 3.55
    assert "u4: ok" in result.stderr


def test_too_many_failures_fail_the_run_with_the_count(tmp_path):
    with streaming_server.running(ttft_ms=5, token_ms=1, fail_every=3) as url:
        result = gpubench("loadgen", "--base-url", url, *ARGS, "--warmup", "0", cwd=tmp_path)
    assert result.code == 1
    (res,) = [r for r in result.records() if r["kind"] == "result"]
    assert res["status"] == "error"
    assert res["error"].startswith("4 of 12 requests failed (33.3% > the allowed 1.0%): http_500 x4")
    assert res["metrics"]["requests_failed"]["value"] == 4  # what was measured is kept
    assert result.records()[-1]["status"] == "failed"


@pytest.mark.parametrize(("args", "message"), [
    (["--base-url", "localhost:8000", "--model", "m"], "use http://host:port"),
    (["--base-url", "http://localhost:1", "--model", "m", "--users", "0"], "users must be at least 1"),
    (["--base-url", "http://localhost:1", "--model", "m", "--rate", "-2"], "rate must be a positive"),
    (["--base-url", "http://localhost:1", "--model", "m", "--price", "0"], "--price must be a positive"),
    (["--base-url", "http://localhost:1", "--model", "m", "--processes", "0"], "processes must be at least 1"),
    (["--base-url", "http://localhost:1", "--model", "m", "--rate", "5", "--burstiness", "0"],
     "burstiness must be a positive"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    result = gpubench("loadgen", *args, cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "gpubench-results").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "5", "--burstiness", "inf"], "burstiness must be a positive number, a finite number (got inf)"),
    (["--rate", "1e-300"], "rate 1e-300 spreads 16 requests over 1.5e+301 s: at most 86,400 s (a day)"),
    (["--rate", "0.0001", "--requests", "10"], "rate 0.0001 spreads 10 requests over 9e+04 s"),
])
def test_a_load_that_cannot_be_drawn_is_refused_before_a_run_folder(tmp_path, args, message):
    """Against a server that answers: the refusal comes before the run, not as a failed run (exit 1) after it."""
    with streaming_server.running(ttft_ms=5, token_ms=1) as url:
        result = gpubench("loadgen", "--base-url", url, "--model", "m", *args, cwd=tmp_path, timeout=60)
    assert result.code == 2 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "gpubench-results").exists()


def test_loadgen_takes_the_run_options_and_goes_through_the_run_lifecycle(tmp_path):
    """--repeats from RunArgs: a result per repeat, each with its own prompts; the summary and verdict a run writes."""
    with streaming_server.running(ttft_ms=20, token_ms=2) as url:
        result = gpubench("loadgen", "--base-url", url, *ARGS, "--repeats", "2", "--run-id",
                          "loadgen-20261203T000000Z-abcdef", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    results = [r for r in result.records() if r["kind"] == "result"]
    assert [(r["setup"], r["repeat"], r["status"]) for r in results] == [("u4", 1, "ok"), ("u4", 2, "ok")]
    assert [r["info"]["prompt_seed"] for r in results] == [42, 43]
    assert all(r["verdict"] for r in results)
    folder = tmp_path / "gpubench-results" / "loadgen-20261203T000000Z-abcdef"
    assert (folder / "summary.md").read_text().startswith("# loadgen: loadgen-20261203T000000Z-abcdef")
    assert result.records()[0]["repeats"] == 2


def test_two_ways_of_counting_tokens_at_once_are_refused(tmp_path):
    result = gpubench("loadgen", "--base-url", "http://localhost:1", "--model", "m", "--token-ids", "--count-tokens",
                      "usage", cwd=tmp_path)
    assert result.code == 2 and "--token-ids is --count-tokens token-ids" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "gpubench-results").exists()
