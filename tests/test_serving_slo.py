"""The latency target on a server of known timing: goodput per request, each level's verdict, the highest load.

tests/streaming_server.py with --max-streams 2 streams two answers at once and queues the rest, first come first
served: with TTFT 200 ms and 5 tokens 40 ms apart, an answer takes 200 + 4 x 40 = 360 ms. With U users in a closed
loop, after the first two answers every request waits (U/2 - 1) answers: p99 TTFT is 200 ms at 1 and 2 users,
200 + 360 = 560 ms at 4 and 200 + 3 x 360 = 1280 ms at 8; TPOT is 40 ms at every load. So at p99 TTFT <= 800 ms and
TPOT <= 200 ms the highest load that meets the target is 4 users; at TPOT <= 30 ms none does. Margins of 240 ms and
more keep a busy machine's scheduling delays out of the answer (at half these timings, two busy cores once added
95 ms to the p99 at 4 users).
"""

import pytest
import streaming_server

from gpubench.catalog import WORKLOADS
from gpubench.loadgen import slo
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec
from gpubench.pricing import cost_metrics
from gpubench.schema import Metric, SetupResult
from gpubench.workloads import serving_common as common
from gpubench.workloads import vllm_serving

TTFT_MS, TOKEN_MS, TOKENS, STREAMS = 200, 40, 5, 2
PRICE = 3.5  # $/hour


def level(url: str, users: int, target: slo.Target) -> tuple[dict[str, float], object]:
    spec = LoadSpec(base_url=url, model="m", users=users, requests=3 * users, warmup=users, input_tokens=8,
                    output_tokens=TOKENS, ignore_eos=True)
    run = run_load(spec, check=False)
    metrics = run.metrics()
    assert metrics["requests_ok"] == 3 * users, run.info()
    metrics.update(slo.level_metrics(run.records, run.duration_s, metrics, target))
    return metrics, run


def settled(url: str, users: int, target: slo.Target, below_ms: float) -> tuple[dict[str, float], object]:
    """The level measured up to three times, the run with the lowest p99 TTFT kept: a busy machine only adds delay
    (two busy cores once read 2,283 ms at 4 users, 560 worked out, and 7,654 at 8), so the run nearest the server's
    own timing decides; a run with its p99 below `below_ms` ends the tries."""
    best = level(url, users, target)
    for _ in range(2):
        if best[0]["ttft_ms_p99"] < below_ms:
            break
        again = level(url, users, target)
        best = min(best, again, key=lambda found: found[0]["ttft_ms_p99"])
    return best


def as_result(setup: str, metrics: dict[str, float]) -> SetupResult:
    values = {name: Metric(value=v, unit="u") for name, v in metrics.items()}
    values.update(cost_metrics(WORKLOADS.get("vllm-serving").cost, values, PRICE))
    return SetupResult(run_id="r", setup=setup, repeat=1, status="ok", metrics=values)


def test_highest_load_under_the_target_is_the_one_worked_out_by_hand():
    config = vllm_serving.Config(slo_ttft_p99_ms=800, slo_tpot_p99_ms=200)
    target = slo.of_config(config)
    with streaming_server.running(ttft_ms=TTFT_MS, token_ms=TOKEN_MS, max_streams=STREAMS) as url:
        measured = {users: settled(url, users, target, below) for users, below in ((1, 280), (2, 280), (4, 800))}
        measured[8] = level(url, 8, target)  # more delay cannot move 8 users under the target
    p99 = {users: m["ttft_ms_p99"] for users, (m, _) in measured.items()}
    assert p99[1] == pytest.approx(200, abs=80) and p99[2] == pytest.approx(200, abs=80), p99
    # below the target at 4 users and never faster than the server's timing is what decides the answer
    assert 560 - 120 <= p99[4] < 800 and p99[8] >= 1280 - 200, p99
    assert [measured[u][0]["slo_met"] for u in (1, 2, 4, 8)] == [1, 1, 1, 0]
    # every request of the passing levels met the per-request target too; at 8 users the first two did, and the
    # two after them (TTFT 560 ms): 4 of 24
    assert measured[4][0]["slo_requests_met_pct"] == 100
    metrics8, run8 = measured[8]
    assert metrics8["slo_requests_met_pct"] == pytest.approx(100 * 4 / 24)
    assert metrics8["goodput_tokens_per_s"] == pytest.approx(4 * TOKENS / run8.duration_s)
    assert metrics8["goodput_requests_per_s"] == pytest.approx(4 / run8.duration_s)

    results = [as_result(f"u{users}", m) for users, (m, _) in measured.items()]
    levels = {f"u{users}": users for users in measured}
    found = common.sweep_at_target(config, results, levels)
    at4 = measured[4][0]
    assert found == {"u4": {"slo_max_users": 4.0, "slo_output_tokens_per_s": at4["output_tokens_per_s"],
                            "slo_usd_per_1M_output_tokens": pytest.approx(
                                PRICE / 3600 / at4["output_tokens_per_s"] * 1e6)}}
    # TPOT is 40 ms at every load: a 30 ms target is met by none, said on the lowest level's row
    strict = vllm_serving.Config(slo_ttft_p99_ms=800, slo_tpot_p99_ms=30)
    assert common.sweep_at_target(strict, results, levels) == {"u1": {"slo_max_users": 0.0}}
    # and no request of it: at 1 user every TTFT is within 800 ms, every TPOT over 30 ms
    _, run1 = measured[1]
    assert all(r.ttft_s * 1e3 <= 800 for r in run1.records)
    assert slo.goodput(run1.records, run1.duration_s, slo.of_config(strict)) == {
        "goodput_requests_per_s": 0.0, "goodput_tokens_per_s": 0.0, "slo_requests_met_pct": 0.0}


def test_a_request_within_the_ttft_target_but_over_the_tpot_target_is_not_goodput():
    """Target p99 TTFT 400 ms, TPOT 50 ms, over a 2 s timed phase, worked by hand:
    a: TTFT 100 ms, 11 tokens by 500 ms: TPOT (500 - 100) / 10 = 40 ms -> meets
    b: TTFT 100 ms, 11 tokens by 900 ms: TPOT 80 ms -> misses on TPOT alone
    c: TTFT 500 ms, 11 tokens by 700 ms: TPOT 20 ms -> misses on TTFT alone
    d: TTFT 200 ms, one token: no TPOT -> meets on its TTFT
    e: failed -> not counted, not among the ok requests
    Goodput: a and d, 2 requests and 11 + 1 tokens in 2 s; 2 of the 4 ok requests met the target."""
    def record(index, ttft_ms, last_ms, tokens):
        return RequestRecord(index=index, ok=True, ttft_s=ttft_ms / 1e3, last_token_s=last_ms / 1e3,
                             e2e_s=last_ms / 1e3, completion_tokens=tokens)

    target = slo.Target(ttft_ms=400, tpot_ms=50)
    a, b, c, d = record(0, 100, 500, 11), record(1, 100, 900, 11), record(2, 500, 700, 11), record(3, 200, 200, 1)
    assert (a.tpot_s, b.tpot_s, c.tpot_s, d.tpot_s) == (pytest.approx(0.040), pytest.approx(0.080),
                                                        pytest.approx(0.020), None)
    assert [slo.request_meets(r, target) for r in (a, b, c, d)] == [True, False, False, True]
    failed = RequestRecord(index=4, ok=False, error_kind="timeout")
    assert slo.goodput([a, b, c, d, failed], 2.0, target) == {
        "goodput_requests_per_s": 1.0, "goodput_tokens_per_s": 6.0, "slo_requests_met_pct": 50.0}


def test_vllm_serving_derive_takes_the_largest_passing_concurrency():
    def judged(setup, ttft, tpot, tokens_per_s):
        return as_result(setup, {"ttft_ms_p99": ttft, "tpot_ms_p99": tpot, "output_tokens_per_s": tokens_per_s})

    results = [judged("c1", 40, 9, 110), judged("c8", 90, 14, 800), judged("c32", 700, 31, 2400),
               judged("c64", 2600, 60, 3900)]
    server = vllm_serving.derive(vllm_serving.Config(), results)  # MLPerf Server: 2,000 / 100 ms
    assert list(server) == ["c32"] and server["c32"]["slo_max_users"] == 32
    interactive = vllm_serving.derive(vllm_serving.Config(slo_ttft_p99_ms=500, slo_tpot_p99_ms=30), results)
    assert list(interactive) == ["c8"] and interactive["c8"]["slo_output_tokens_per_s"] == 800
    for values in server.values():
        assert set(values) <= set(vllm_serving.METRICS)


def test_targets_default_to_mlperf_server_and_parse_from_words():
    assert slo.of_config(vllm_serving.Config()) == slo.preset("server")
    assert (slo.preset("server").ttft_ms, slo.preset("server").tpot_ms) == (2000, 100)
    assert (slo.preset("interactive").ttft_ms, slo.preset("interactive").tpot_ms) == (500, 30)
    assert slo.parse("ttft=750, tpot=40") == slo.Target(750, 40)
    assert slo.parse("interactive") == slo.preset("interactive")
    for bad in ("fast", "ttft=500", "ttft=0,tpot=30", "ttft=500,tpot=30,x=1"):
        with pytest.raises(slo.TargetError):
            slo.parse(bad)
    # 400 nines are a float's infinity: "TTFT <= inf ms" would pass every load
    with pytest.raises(slo.TargetError, match="positive, finite"):
        slo.parse("ttft=" + "9" * 400 + ",tpot=100")
    with pytest.raises(slo.TargetError, match="positive, finite"):
        slo.parse("ttft=2000,tpot=" + "9" * 400)


def test_each_server_mode_gets_its_own_highest_load():
    from gpubench.workloads import ollama_vs_vllm, vllm_fp8

    def judged(setup, ttft, tpot):
        return as_result(setup, {"ttft_ms_p99": ttft, "tpot_ms_p99": tpot, "output_tokens_per_s": 100.0})

    fp8 = vllm_fp8.derive(vllm_fp8.Config(), [
        judged("bf16-c1", 50, 10), judged("bf16-c8", 90, 40), judged("bf16-c32", 800, 120),
        judged("fp8-c1", 40, 8), judged("fp8-c8", 70, 25), judged("fp8-c32", 600, 60)])
    assert fp8["bf16-c8"]["slo_max_users"] == 8 and fp8["fp8-c32"]["slo_max_users"] == 32
    ollama = ollama_vs_vllm.derive(ollama_vs_vllm.Config(), [  # no GSM8K pass: the load levels still count
        judged("ollama-q4km-u1", 300, 20), judged("ollama-q4km-u4", 2500, 30), judged("vllm-bf16-u16", 200, 30)])
    assert ollama == {"ollama-q4km-u1": {"slo_max_users": 1.0, "slo_output_tokens_per_s": 100.0,
                                         "slo_usd_per_1M_output_tokens": pytest.approx(PRICE / 3600 / 100 * 1e6)},
                      "vllm-bf16-u16": {"slo_max_users": 16.0, "slo_output_tokens_per_s": 100.0,
                                        "slo_usd_per_1M_output_tokens": pytest.approx(PRICE / 3600 / 100 * 1e6)}}
