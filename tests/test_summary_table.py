"""The end-of-run table: speed-up against the study's baseline, spread flags, cost notes."""

import pytest

from gpubench.catalog import WORKLOADS
from gpubench.results import summary
from gpubench.schema import Metric, SetupResult, summarize_results

SPEC = WORKLOADS.get("train-compile")  # baseline eager-sdpa; cost basis tokens_per_s


def rows(setup, values, metric="tokens_per_s"):
    return [SetupResult(run_id="r", setup=setup, repeat=i + 1, status="ok",
                        metrics={metric: Metric(value=v, unit="tokens/s", better="higher")})
            for i, v in enumerate(values)]


def test_speedup_is_against_the_first_setup_on_the_cost_metric():
    results = rows("eager-sdpa", [100, 110, 90]) + rows("compile-sdpa", [150, 120, 130])
    results.append(SetupResult(run_id="r", setup="eager-eager", repeat=1, status="oom", error="x"))
    summaries = summarize_results(["eager-sdpa", "compile-sdpa", "eager-eager"], results)
    assert summary.speedups(SPEC, summaries) == {"eager-sdpa": 1.0, "compile-sdpa": pytest.approx(1.3)}
    header, table = summary.table(SPEC, None, summaries)
    assert header[-1] == "vs eager-sdpa"
    assert table[1][-1] == "1.30x" and table[2][:3] == ["eager-eager", "oom", "0/1"] and table[2][-1] == ""


def test_a_spread_over_five_percent_is_flagged_and_a_missing_price_said():
    summaries = summarize_results(["eager-sdpa", "compile-sdpa"],
                                  rows("eager-sdpa", [100, 101, 99]) + rows("compile-sdpa", [100, 130, 70]))
    by_setup = {s.setup: s for s in summaries}
    assert summary.cell(by_setup["eager-sdpa"].metrics["tokens_per_s"]) == "100 ±1%"
    assert summary.cell(by_setup["compile-sdpa"].metrics["tokens_per_s"]) == "100 ±30% (noisy)"
    notes = summary.notes(smoke=False, priced=False, summaries=summaries)
    assert notes == [summary.NO_PRICE, "spread over 5% (noisy, treat differences as within noise): compile-sdpa"]
    assert summary.notes(smoke=True, priced=True, summaries=summaries[:1]) == [summary.SMOKE_BANNER]


def test_skipped_setups_are_said_with_the_exit_code_rule():
    skipped = SetupResult(run_id="r", setup="ollama-q8", repeat=1, status="skipped", error="no ollama binary")
    summaries = summarize_results(["vllm-bf16", "ollama-q8"], rows("vllm-bf16", [100.0]) + [skipped])
    assert summary.notes(smoke=False, priced=True, summaries=summaries) == [
        "skipped, each for the reason on its line, not failed (exit 0 if the rest are ok): ollama-q8"]
    assert summary.notes(smoke=False, priced=True, summaries=summaries[1:]) == [
        "no setup ran here (each says why it was skipped): exit 1"]


def test_setups_an_interrupted_run_never_reached_are_not_run_not_skipped():
    # an H200 run stopped by its time limit during its last setup: no result for it, so no reason to skip either
    summaries = summarize_results(["llamacpp-q8-u16", "llamacpp-q8-gsm8k"], rows("llamacpp-q8-u16", [724.0]))
    assert [s.status for s in summaries] == ["ok", "not-run"]
    assert summary.notes(smoke=False, priced=True, summaries=summaries) == [
        "not run, the run ended before them (no result; run them again with --setups): llamacpp-q8-gsm8k"]
    assert summary.table(SPEC, None, summaries)[1][1][:3] == ["llamacpp-q8-gsm8k", "not-run", "0/0"]


def test_a_seconds_basis_inverts_the_ratio():
    spec = WORKLOADS.get("cold-start")  # total_s: fewer seconds is faster
    results = rows(spec.setups[0], [50.0], "total_s") + rows("cache-warm", [20.0], "total_s")
    summaries = summarize_results([spec.setups[0], "cache-warm"], results)
    assert summary.speedups(spec, summaries)["cache-warm"] == pytest.approx(2.5)
