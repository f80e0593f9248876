"""`gpubench run whisper --smoke`: the real CLI on the CPU, one faster-whisper and the transformers setup."""

import pytest
from clirun import gpubench


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    result = gpubench("run", "whisper", "--smoke", "--setups", "hf-large-v3-fp16-b16,fw-large-v3-fp16-seq",
                      "--price", "1.18", cwd=tmp_path_factory.mktemp("run"))
    assert result.code == 0, result.stderr[-3000:]
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    derived = {r["setup"]: r for r in result.records() if r["kind"] == "derived"}
    return rows, derived


def values(row) -> dict:
    return {k: v["value"] for k, v in row["metrics"].items()}


def test_speed_is_audio_over_wall_time_and_costs_follow_from_it(smoke):
    rows, _ = smoke
    for row in rows.values():
        assert row["status"] == "ok", row["error"]
        m = values(row)
        assert m["audio_s"] == pytest.approx(2.9856875 + 1.143375 + 2.888625, abs=0.01)  # the three English clips
        assert m["realtime_factor"] == pytest.approx(m["audio_s"] / m["transcribe_s"], rel=1e-9)
        assert m["warmup_s"] == 1 and m["model_load_s"] > 0 and m["peak_mem_gib"] > 0
        assert row["device"] == "cpu" and row["dtype"] == row["info"]["compute_type"]  # the harness's typed facts
        # $ per 1,000 audio hours at $1.18/h: 1,000 h of audio take 1,000 / realtime_factor hours.
        assert m["usd_per_1k_audio_hours"] == pytest.approx(1.18 * 1000 / m["realtime_factor"], rel=1e-9)


def test_real_weights_are_scored_and_random_ones_are_not(smoke):
    rows, _ = smoke
    seq = rows["fw-large-v3-fp16-seq"]
    assert values(seq)["wer_pct"] <= 10 and values(seq)["reference_words"] == 12
    assert seq["info"]["model"].startswith("Whisper tiny.en") and seq["info"]["decoding"].startswith("beam_size=5")
    assert seq["device"] == "cpu" and rows["hf-large-v3-fp16-b16"]["device"] == "cpu"  # the config's "auto" here
    hf = rows["hf-large-v3-fp16-b16"]
    assert "wer_pct" not in hf["metrics"] and hf["info"]["wer"].startswith("not reported: random weights")
    assert hf["info"]["attention"] == "sdpa" and hf["info"]["model"] == "random weights, tiny shapes"


def test_speed_against_the_sequential_setup_is_derived(smoke):
    rows, derived = smoke
    ratio = values(rows["hf-large-v3-fp16-b16"])["realtime_factor"] / values(rows["fw-large-v3-fp16-seq"])[
        "realtime_factor"]
    assert derived["hf-large-v3-fp16-b16"]["metrics"]["x_vs_sequential"]["value"] == pytest.approx(ratio)
    assert "fw-large-v3-fp16-seq" not in derived


def test_decoder_bandwidth_is_measured_for_transformers_and_said_absent_for_ctranslate2(smoke):
    rows, _ = smoke
    hf = rows["hf-large-v3-fp16-b16"]
    m, facts = values(hf), hf["info"]["bandwidth"]
    # Whisper tiny on the CPU in fp32: K and V of 4 decoder layers x 384 wide x 4 B = 12,288 B a token
    assert facts["kv_bytes_per_token"] == 2 * 4 * 384 * 4
    # 8 tokens a window (random weights) + the prompt's step: at least 8 forward calls of the decoder
    assert facts["decoder_steps"] >= 8 and facts["rows_per_step"] >= 1
    # each step reads at least the decoder's weights and one row's cross-attention KV over 1500 frames
    assert facts["bytes_per_step"] >= facts["decoder_weight_bytes"] + facts["rows_per_step"] * 1500 * 12_288
    assert m["achieved_gbps"] == pytest.approx(facts["bytes_per_step"] / (m["decoder_step_ms"] / 1e3) / 1e9)
    seq = rows["fw-large-v3-fp16-seq"]
    assert "achieved_gbps" not in seq["metrics"]
    assert seq["info"]["bandwidth"] == "not measured: CTranslate2 does not expose the decoder's step time"
