"""What a setup is fed: audio folders (with or without references), cut sets, synthetic audio, and the
random-weight model at large-v3's real shapes and token ids."""

import shutil

import pytest
import torch
from clirun import gpubench

from gpubench.workloads.whisper import _first_seconds
from gpubench.workloads.whisper import audio as whisper_audio
from gpubench.workloads.whisper import random_weights as whisper_random


def test_a_folder_missing_some_references_is_refused_with_its_names(tmp_path):
    source = whisper_audio.audioeval_folder()
    for name in ("hello_world.wav", "hello_world.txt", "counting.wav"):
        shutil.copy(source / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match="no .txt reference for counting.wav"):
        whisper_audio.from_folder(tmp_path)
    (tmp_path / "hello_world.txt").unlink()
    assert [c.reference for c in whisper_audio.from_folder(tmp_path)] == [None, None]  # none: speed only


def test_a_bad_audio_dir_is_one_clear_error_row(tmp_path):
    result = gpubench("run", "whisper", "--smoke", "--setups", "fw-large-v3-int8-b16",
                      "--set", f"audio_dir={tmp_path / 'nowhere'}", cwd=tmp_path)
    assert result.code == 1
    row = next(r for r in result.records() if r["kind"] == "result")
    assert row["status"] == "error" and row["error"].endswith("nowhere: not a folder")


def test_cutting_the_set_drops_the_reference_of_a_cut_clip():
    clips = whisper_audio.from_folder(whisper_audio.AUDIOEVAL_EN)  # 2.99 s, 1.14 s, 2.89 s
    kept = _first_seconds(clips, 3.5)
    assert [c.name for c in kept] == ["counting", "hello_world"]
    assert kept[0].reference and kept[1].reference is None
    assert sum(c.seconds for c in kept) == pytest.approx(3.5, abs=1e-3)


def test_synthetic_audio_comes_in_talk_length_clips():
    clips = whisper_audio.synthetic(820)
    assert [round(c.seconds, 1) for c in clips] == [809.5, 10.5] and all(c.reference is None for c in clips)
    assert 0.01 < float(abs(clips[0].audio).mean()) < 0.2


def test_the_random_model_has_large_v3_shapes_and_token_ids():
    with torch.device("meta"):
        model = whisper_random.build_model("large-v3")
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 1543.5
    ids = whisper_random.token_ids("large-v3")  # openai/whisper-large-v3's added_tokens
    assert (ids["<|endoftext|>"], ids["<|en|>"], ids["<|transcribe|>"], ids["<|notimestamps|>"]) == (
        50257, 50259, 50360, 50364)
    assert model.generation_config.lang_to_id["<|yue|>"] == 50358
