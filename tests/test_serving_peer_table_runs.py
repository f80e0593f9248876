"""benchmarks/serving_peer_table.py holds a level to the tolerance only where its two runs are alike: the same
length within UNEQUAL_X, and at least WAVES_MIN requests a user. Read on the 2026-12-04c hold's own files, where the
budget left vLLM's client 2,000 and 997 requests against gpubench's 10,000."""

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOLD = REPO / "benchmarks/results/h200-2026-12-04c"


def peer_table():
    spec = importlib.util.spec_from_file_location("serving_peer_table", REPO / "benchmarks/serving_peer_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runs_of_different_lengths_or_too_few_waves_are_not_alike():
    table = peer_table()
    assert table.unlike_runs(128, 1280, 1280) is None
    assert table.unlike_runs(512, 2000, 10000) == "2,000 requests against 10,000"
    assert table.unlike_runs(512, 10000, 7000) is None  # within 1.5x
    assert "fewer than 4 a user" in table.unlike_runs(1024, 1000, 1000)
    assert table.unlike_runs(256, None, 1280) is None  # a missing run is reported as missing, not as unlike


def test_the_holds_unequal_levels_are_shown_but_not_held(capsys):
    table = peer_table()
    levels = table.rounds([HOLD / "machine1", HOLD / "machine2-u512", HOLD / "machine2-u1024"])
    assert sorted(levels) == [("u", 128), ("u", 256), ("u", 512), ("u", 1024)]
    alike = table.closed_level(256, levels[("u", 256)]["vllm"], levels[("u", 256)]["gpubench"])
    unlike = table.closed_level(1024, levels[("u", 1024)]["vllm"], levels[("u", 1024)]["gpubench"])
    printed = capsys.readouterr().out
    assert alike == 3  # output tok/s, TPOT and E2E outside 3% at 256 users, equal runs
    assert unlike == 0 and "the runs are not alike (neq): 997 requests against 10,000" in printed
    assert " 1024 output tok/s          9,999       10,880   1.088 neq" in printed


def test_the_servers_api_process_cpu_per_run(tmp_path):
    table = peer_table()
    run = tmp_path / "gpubench-u64-r1.server.json"
    run.write_text('{"api_cpu_s": 2.5, "engine_cpu_s": 9.5, "wall_s": 10.0, "tokens": 50000}')  # as the check writes
    assert table.server_api_cpu(run) == {"API CPU %": 25.0, "API ms/1k tok": 50.0, "engine CPU %": 95.0}
    assert table.server_api_cpu(tmp_path / "vllm-u64-r1.server.json") == {
        "API CPU %": None, "API ms/1k tok": None, "engine CPU %": None}


def test_the_servers_own_count_over_each_clients_timed_window(tmp_path):
    """server_gauges_log.py's counters, read from the first to the last sample inside a run's timed window:
    gpubench's window from its result (wall clock), vLLM's client's from its requests' start times (monotonic)."""
    table = peer_table()
    names = ["vllm:generation_tokens", "vllm:prompt_tokens", "vllm:request_success",
             "vllm:iteration_tokens_total_count", "vllm:iteration_tokens_total_sum", "vllm:num_preemptions",
             "vllm:prefix_cache_queries", "vllm:prefix_cache_hits"]
    # one sample a second, the unix clock 1,000,000 s ahead of the monotonic one; 100 tokens/s before t=5 (the
    # warm-up) and 300 tokens/s from then on, at 3 tokens a step, 512 prompt tokens a request, 2 hits in 8 queries
    rows = []
    for t in range(20):
        made = 100 * min(t, 5) + 300 * max(t - 5, 0)
        rows.append([1e6 + t, float(t), made, 512 * made / 256, made / 256, made / 3, made, 0, 8 * t, 2 * t])
    log = {"names": ["vllm:num_requests_running", "vllm:num_requests_waiting"], "samples": [],
           "counter_names": names, "counters": rows}
    (tmp_path / "gpubench-u8-r1.gauges.json").write_text(json.dumps(log))
    (tmp_path / "gpubench-u8-r1.jsonl").write_text(json.dumps(
        {"kind": "result", "status": "ok", "metrics": {}, "info": {"timed_window_unix": [1e6 + 5.5, 1e6 + 15.5]}}))
    # nvidia-smi's log beside it, UTC stamps: the SM clock drops from 1,980 to 1,500 MHz at t=10
    stamps = [datetime.fromtimestamp(1e6 + t, UTC).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] for t in range(20)]
    (tmp_path / "gpubench-u8-r1.gpu.csv").write_text("".join(
        f"{stamp}, {1980 if t < 10 else 1500}, 700.5, 60, 100\n" for t, stamp in enumerate(stamps)) + "2026/12/0")
    view = table.server_view(tmp_path / "gpubench-u8-r1.jsonl")
    assert view == {"server tok/s": 300.0, "prompt tok/req": 512.0, "steps/s": 100.0, "tokens/step": 3.0,
                    "preemptions": 0, "prefix hit %": 25.0,
                    "SM MHz": (4 * 1980 + 6 * 1500) / 10, "GPU W": 700.5, "GPU C": 60.0}  # t = 6 to 15
    (tmp_path / "vllm-u8-r1.gauges.json").write_text(json.dumps(log))
    (tmp_path / "vllm-u8-r1.json").write_text(json.dumps({"start_times": [1.5, 2.0], "latencies": [3.0, 2.0]}))
    (tmp_path / "vllm-u8-r1.gpu.csv").write_text((tmp_path / "gpubench-u8-r1.gpu.csv").read_text())
    view = table.server_view(tmp_path / "vllm-u8-r1.json")
    assert view["server tok/s"] == 100.0 and view["SM MHz"] == 1980  # t 2 to 4: the warm-up's rate and clock
    (tmp_path / "gpubench-u8-r2.jsonl").write_text(json.dumps({"kind": "result", "status": "ok", "metrics": {}}))
    assert table.server_view(tmp_path / "gpubench-u8-r2.jsonl") is None  # no window, no log: nothing to say
