"""`gpubench run cold-start --smoke`: every start in its own process, the study's phases, no hub reachable."""

import socket

import pytest
from clirun import gpubench

PHASES = ("import_s", "download_s", "load_to_gpu_s", "first_token_s")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("run")
    with socket.socket() as closed:  # bound, never listening: a hub endpoint that refuses connections
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        result = gpubench("run", "cold-start", "--smoke", "--price", "0.54", "--set", f"cache_dir={cwd / 'cache'}",
                          cwd=cwd, env={"HF_ENDPOINT": endpoint})
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    return result, rows, endpoint


def test_exits_0_with_every_start_reported(smoke_run):
    result, rows, _ = smoke_run
    assert result.code == 0, result.stderr[-3000:]
    assert list(rows) == ["fresh-download", "fresh-download-xet-hp", "cache-evicted", "cache-warm"]
    assert result.records()[-1]["status"] == "ok"


def test_fresh_downloads_are_skipped_with_the_reason_and_quickly(smoke_run):
    _, rows, endpoint = smoke_run
    for setup in ("fresh-download", "fresh-download-xet-hp"):
        row = rows[setup]
        assert row["status"] == "skipped" and not row["metrics"]
        assert "no hub reachable" in row["error"] and endpoint.removeprefix("http://") in row["error"]
        assert "download phase skipped" in row["error"]
        assert row["duration_s"] < 10
    assert rows["fresh-download-xet-hp"]["info"]["HF_XET_HIGH_PERFORMANCE"] == "1"
    assert rows["fresh-download"]["info"]["HF_XET_HIGH_PERFORMANCE"] == ""


def test_cached_starts_time_the_study_phases_from_a_fresh_import(smoke_run):
    _, rows, _ = smoke_run
    for setup in ("cache-evicted", "cache-warm"):
        row = rows[setup]
        assert row["status"] == "ok", row["error"]
        m = {k: v["value"] for k, v in row["metrics"].items()}
        assert row["metrics"]["total_s"]["unit"] == "s"
        # torch, huggingface_hub and transformers were not loaded before the timer: the import is timed cold
        assert row["info"]["preloaded_modules"] == []
        assert m["import_s"] > 0.2 and all(m[p] > 0 for p in PHASES)
        assert sum(m[p] for p in PHASES) <= m["total_s"] < sum(m[p] for p in PHASES) + 0.5
        assert m["download_s"] < 1  # a cache check, not a download
        assert m["prompt_tokens"] > 20  # the chat template ran: system prompt + user turn + generation prompt
        assert row["info"]["missing_keys"] == [] and (row["device"], row["dtype"]) == ("cpu", "bfloat16")


def test_the_load_bandwidth_sits_next_to_a_raw_read_of_the_same_files(smoke_run):
    _, rows, _ = smoke_run
    for setup in ("cache-evicted", "cache-warm"):
        m = {k: v["value"] for k, v in rows[setup]["metrics"].items()}
        info = rows[setup]["info"]
        assert m["checkpoint_gb"] * 1e9 == info["checkpoint"]["weight_bytes"]
        assert m["load_read_gbps"] == pytest.approx(m["checkpoint_gb"] / m["load_to_gpu_s"], rel=1e-9)
        assert m["raw_read_gbps"] > 0 and m["raw_read_warm_gbps"] > 0
        assert m["load_vs_raw_read"] == pytest.approx(m["load_read_gbps"] / m["raw_read_gbps"], rel=1e-9)
        assert info["raw_read_resident_before_pct"] < 5  # the raw read started from disk


def test_eviction_took_effect_and_the_warm_start_found_the_files_in_ram(smoke_run):
    _, rows, _ = smoke_run
    assert rows["cache-evicted"]["metrics"]["resident_at_start_pct"]["value"] < 5
    assert rows["cache-warm"]["metrics"]["resident_at_start_pct"]["value"] > 95
    assert rows["cache-evicted"]["info"]["filesystem"]["type"] not in ("tmpfs", "unknown")


def test_the_random_checkpoint_is_written_once_then_reused(smoke_run):
    _, rows, _ = smoke_run
    first, second = rows["cache-evicted"]["info"]["checkpoint"], rows["cache-warm"]["info"]["checkpoint"]
    assert first["source"] == "random" and first["reused"] is False and second["reused"] is True
    assert first["shape"]["hidden_size"] == 64 and first["write_s"] > 0


def test_gpu_cost_of_the_wait_is_the_total_at_the_hourly_price(smoke_run):
    _, rows, _ = smoke_run
    for setup in ("cache-evicted", "cache-warm"):
        m = {k: v["value"] for k, v in rows[setup]["metrics"].items()}
        assert m["usd_per_start"] == pytest.approx(0.54 * m["total_s"] / 3600, rel=1e-9)
