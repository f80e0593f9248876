"""faster-whisper under --weights random: the random-weight checkpoint converted by CTranslate2's own converter
(made once, then kept), and a fixed, speech-like work per 30 s window: exactly random_tokens_per_window tokens in
every window, batched over fixed windows or sequential, through the whole setup on the CPU."""

from __future__ import annotations

import json

import pytest

from gpubench.workload import SetupContext
from gpubench.workloads import whisper
from gpubench.workloads.whisper import audio as whisper_audio
from gpubench.workloads.whisper import engines as whisper_engines
from gpubench.workloads.whisper import random_weights as whisper_random


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    cache = tmp_path_factory.mktemp("ct2-cache")
    return whisper_random.ctranslate2_model("tiny", seed=3, cache=cache), cache


def test_the_converted_model_carries_what_faster_whisper_reads_beside_it(converted):
    folder, cache = converted
    assert {"model.bin", "config.json", "vocabulary.json", "tokenizer.json", "preprocessor_config.json"} <= {
        p.name for p in folder.iterdir()}
    assert json.loads((folder / "preprocessor_config.json").read_text())["feature_size"] == 80  # tiny's mel bins
    config = json.loads((folder / "config.json").read_text())
    assert len(config["lang_ids"]) == 99 and config["suppress_ids"] == []
    assert json.loads((folder / "vocabulary.json").read_text())[50257] == "<|endoftext|>"  # the real ids
    mtime = (folder / "model.bin").stat().st_mtime_ns
    again = whisper_random.ctranslate2_model("tiny", seed=3, cache=cache)
    assert again == folder and (folder / "model.bin").stat().st_mtime_ns == mtime  # kept, not converted again
    assert [p.name for p in cache.iterdir()] == [folder.name]  # no half-written folder left behind


def config(**fields):
    values = {**{f: getattr(whisper.Config(), f) for f in whisper.Config.__dataclass_fields__}, **fields}
    return whisper.Config(**values)


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_every_window_decodes_exactly_the_fixed_number_of_tokens(converted, mode):
    folder, _ = converted
    transcribe, facts = whisper_engines.faster_whisper(
        str(folder), mode, "float16", "cpu", config(batch_size=2, beam_size=2, cpu_threads=1), fixed_tokens=6)
    audio = whisper_audio.synthetic(65.0, seed=1)[0].audio  # 65 s: windows 0-30, 30-60, 60-65
    text = transcribe(audio)
    assert transcribe.decoded_tokens == 3 * 6, text
    assert facts["compute_type"] == "float32" and facts["random_weights_decoding"].startswith("6 text tokens per 30 s")
    assert ("no VAD" in facts["random_weights_decoding"]) == (mode == "batched")


def test_fixed_windows_cover_the_audio_back_to_back():
    assert whisper_engines.fixed_windows(16000 * 65) == [
        {"start": 0.0, "end": 30.0}, {"start": 30.0, "end": 60.0}, {"start": 60.0, "end": 65.0}]
    assert whisper_engines.fixed_windows(16000 * 30) == [{"start": 0.0, "end": 30.0}]


def test_a_random_setup_converts_loads_and_decodes_the_studys_work(converted, monkeypatch, tmp_path):
    """The whole setup, at tiny's shapes standing in for large-v3's: converted (phase convert_model), loaded
    under the harness's clock, 65 s of synthetic audio in 3 windows of 4 tokens."""
    monkeypatch.setitem(whisper_random.SHAPES, "large-v3", whisper_random.SHAPES["tiny"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    phases = []
    ctx = SetupContext(run_id="r", setup="fw-large-v3-fp16-b16", repeat=1, smoke=False, weights="random",
                       progress=lambda phase, **kw: phases.append(phase), weight_paths={})
    cfg = config(synthetic_audio_s=65.0, warmup_audio_s=1.0, random_tokens_per_window=4, batch_size=4,
                 device="cpu", cpu_threads=1)
    metrics = whisper.run_setup("fw-large-v3-fp16-b16", cfg, ctx)
    assert phases[:3] == ["load_audio", "convert_model", "load_model"] and "timed" in phases
    assert metrics["decoded_tokens"] == 3 * 4 and metrics["audio_s"] == pytest.approx(65.0)
    assert metrics["model_load_s"] > 0 and metrics["realtime_factor"] > 0 and "wer_pct" not in metrics
    assert ctx.info["model"].startswith("random weights, large-v3 shapes, converted to CTranslate2")
    assert ctx.info["wer"].startswith("not reported: random weights") and ctx.info["device"] == "cpu"
    assert (tmp_path / "gpubench" / "whisper-ct2").is_dir()  # kept for the next setups


@pytest.mark.parametrize(("prompt", "tokens"), [(2, 6), (4, 100), (105, 100), (228, 100), (9, 10)])
def test_max_new_tokens_lands_on_ctranslate2s_decoded_length(prompt, tokens):
    """CTranslate2 decodes min(max_length // 2, max_length - prompt + 1) tokens, faster-whisper's max_length being
    prompt + max_new_tokens (measured: prompt 2, 7, 13 with max_new_tokens 6 -> 4, 6, 7 tokens)."""
    new = whisper_engines.max_new_tokens_for(tokens, prompt)
    total = prompt + new
    assert min(total // 2, total - prompt + 1) == tokens
