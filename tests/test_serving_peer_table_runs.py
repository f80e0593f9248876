"""benchmarks/serving_peer_table.py holds a level to the tolerance only where its two runs are alike: the same
length within UNEQUAL_X, and at least WAVES_MIN requests a user. Read on the 2026-12-04c hold's own files, where the
budget left vLLM's client 2,000 and 997 requests against gpubench's 10,000."""

import importlib.util
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
