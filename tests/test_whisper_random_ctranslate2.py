"""faster-whisper under --weights random: the random-weight checkpoint converted by CTranslate2's own converter
(made once, then kept), and a fixed, speech-like work per 30 s window: exactly random_tokens_per_window tokens in
every window, batched over fixed windows or sequential, through the whole setup on the CPU."""

from __future__ import annotations

import json

import pytest
from clirun import gpubench

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


def test_no_special_or_timestamp_token_reaches_a_beams_candidates():
    # the logits of 2,000 hidden states of the final layer norm's scale: every id from end-of-text on (1,608 of them)
    # stays below the 10th best text token (beam 5 keeps 2 x 5 candidates), so decoding needs no long suppress list;
    # at full size their rows would put one among the candidates in about half the rows
    import torch

    ids = whisper_random.token_ids("tiny")
    eot = ids["<|endoftext|>"]
    with torch.random.fork_rng():
        torch.manual_seed(0)
        logits = torch.randn(2000, 384) @ whisper_random.build_model("tiny").proj_out.weight.detach().T
    tenth_text = logits[:, :eot].topk(10).values[:, -1]
    assert (logits[:, eot:].max(dim=1).values < tenth_text).all()


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


def test_a_random_run_converts_loads_and_decodes_the_studys_work(tmp_path):
    """`gpubench run whisper --smoke --weights random`: faster-whisper on random tiny converted once (the
    second setup finds it kept), 8 text tokens in each of the three clips' windows, batched and sequential."""
    result = gpubench("run", "whisper", "--smoke", "--weights", "random", "--setups",
                      "fw-turbo-fp16-b16,fw-large-v3-fp16-seq", cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.code == 0, result.stderr[-3000:]
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    phases = [r["phase"] for r in result.records() if r["kind"] == "progress"]
    assert phases.count("convert_model") == 2 and phases.index("convert_model") < phases.index("load_model")
    for row in rows.values():
        assert row["status"] == "ok", row["error"]
        metrics = {k: v["value"] for k, v in row["metrics"].items()}
        assert metrics["decoded_tokens"] == 3 * 8 and metrics["model_load_s"] > 0 and "wer_pct" not in metrics
        assert row["info"]["model"].startswith("random weights, tiny shapes, converted to CTranslate2")
        assert row["info"]["wer"].startswith("not reported: random weights")
    assert [p.name for p in (tmp_path / "gpubench" / "whisper-ct2").iterdir()] == [
        rows["fw-turbo-fp16-b16"]["info"]["model"].split("(")[1].rstrip(")")]  # one conversion, kept


def test_the_bare_scripts_decoding_is_the_harness_s(converted):
    """benchmarks/whisper_bare.py writes the random-weight options out itself (it imports nothing of gpubench):
    they must stay the engine's, or its peer figure measures other work."""
    import importlib.util
    from pathlib import Path

    from faster_whisper import WhisperModel

    spec = importlib.util.spec_from_file_location(
        "whisper_bare", Path(__file__).resolve().parent.parent / "benchmarks" / "whisper_bare.py")
    bare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bare)
    folder, _ = converted
    model = WhisperModel(str(folder), device="cpu", compute_type="float32", cpu_threads=1)
    for mode in ("batched", "sequential"):
        for samples in (16000 * 65, 16000 * 600):
            expected = {"language": "en", **whisper_engines.fixed_work(model, mode, 100, samples)}
            assert bare.decoding_options(model, mode, 100, samples, "en") == expected
