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
        assert m["warmup_s"] == 1 and m["model_load_s"] > 0 and m["peak_rss_gib"] > 0
        # $ per 1,000 audio hours at $1.18/h: 1,000 h of audio take 1,000 / realtime_factor hours.
        assert m["usd_per_1k_audio_hours"] == pytest.approx(1.18 * 1000 / m["realtime_factor"], rel=1e-9)


def test_real_weights_are_scored_and_random_ones_are_not(smoke):
    rows, _ = smoke
    seq = rows["fw-large-v3-fp16-seq"]
    assert values(seq)["wer_pct"] <= 10 and values(seq)["reference_words"] == 12
    assert seq["info"]["model"].startswith("Whisper tiny.en") and seq["info"]["decoding"].startswith("beam_size=5")
    assert seq["device"] == "cpu" and rows["hf-large-v3-fp16-b16"]["device"] == "cpu"  # CTranslate2 says it in info
    hf = rows["hf-large-v3-fp16-b16"]
    assert "wer_pct" not in hf["metrics"] and hf["info"]["wer"].startswith("not reported: random weights")
    assert hf["info"]["attention"] == "sdpa" and hf["info"]["model"] == "random weights, tiny shapes"


def test_speed_against_the_sequential_setup_is_derived(smoke):
    rows, derived = smoke
    ratio = values(rows["hf-large-v3-fp16-b16"])["realtime_factor"] / values(rows["fw-large-v3-fp16-seq"])[
        "realtime_factor"]
    assert derived["hf-large-v3-fp16-b16"]["metrics"]["x_vs_sequential"]["value"] == pytest.approx(ratio)
    assert "fw-large-v3-fp16-seq" not in derived
