"""The audio set: 16 kHz mono float32 clips with their reference transcripts.

Three sources, in the order a run picks them:
- a folder given as `audio_dir`: every audio file in it, each with a same-stem .txt reference;
  "@audioeval-en" names the English clips that ship in the pytest-audioeval package (smoke runs);
- the study's set, distil-whisper/tedlium-long-form (11 TED talks, 8,905 s): its parquet files, found
  like weights (a cache volume or baked into the image), audio bytes decoded with PyAV;
- synthetic speech-like audio, only with --weights random: no references, so no word error rate.
Decoding goes through faster_whisper.decode_audio (PyAV, resampled to 16 kHz mono), as the study did.
"""

from __future__ import annotations

import importlib.util
import io
import math
from dataclasses import dataclass
from pathlib import Path

SAMPLE_RATE = 16000
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".m4a", ".ogg", ".opus", ".webm", ".mp4")
AUDIOEVAL_EN = "@audioeval-en"
TEDLIUM = "datasets/distil-whisper/tedlium-long-form"
TED_TALK_S = 8905 / 11  # the study's talks are 13.5 min long on average


@dataclass
class Clip:
    name: str
    audio: object  # numpy float32 array at SAMPLE_RATE
    reference: str | None

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE


def decode(source) -> object:
    from faster_whisper import decode_audio

    return decode_audio(source, sampling_rate=SAMPLE_RATE)


def audioeval_installed() -> bool:
    spec = importlib.util.find_spec("pytest_audioeval")
    return spec is not None and bool(spec.submodule_search_locations)


def audioeval_folder() -> Path:
    spec = importlib.util.find_spec("pytest_audioeval")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{AUDIOEVAL_EN}: the pytest-audioeval package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "samples" / "audio" / "en"


def from_folder(folder: str | Path) -> list[Clip]:
    folder = audioeval_folder() if str(folder) == AUDIOEVAL_EN else Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"audio_dir {folder}: not a folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"audio_dir {folder}: no audio files ({', '.join(AUDIO_SUFFIXES)})")
    without = [p.name for p in files if not p.with_suffix(".txt").is_file()]
    if without and len(without) < len(files):  # all or none: a WER over part of the set would mislead
        raise FileNotFoundError(f"audio_dir {folder}: no .txt reference for {', '.join(without[:5])}")
    return [Clip(p.stem, decode(str(p)), None if without else p.with_suffix(".txt").read_text().strip())
            for p in files]


def from_tedlium(folder: str | Path, split: str = "test") -> list[Clip]:
    """The long-form TED set's parquet files (`data/<split>-*.parquet`): columns audio {bytes, path}, text."""
    import pyarrow.parquet as pq

    files = sorted(Path(folder).rglob(f"{split}-*.parquet")) or sorted(Path(folder).rglob(f"{split}/*.parquet"))
    if not files:
        raise FileNotFoundError(f"{folder}: no {split} parquet files of {TEDLIUM}")
    clips = []
    for file in files:
        table = pq.read_table(file, columns=["audio", "text"]).to_pylist()
        for row in table:
            name = Path(row["audio"].get("path") or f"talk-{len(clips) + 1:02d}").stem
            clips.append(Clip(name, decode(io.BytesIO(row["audio"]["bytes"])), row["text"]))
    return clips


def synthetic(seconds: float, seed: int = 0) -> list[Clip]:
    """Speech-like sound (voiced harmonics at a syllable rhythm, plus noise) cut into talk-length clips."""
    import numpy as np

    rng = np.random.default_rng(seed)
    total, per_clip = int(seconds * SAMPLE_RATE), int(TED_TALK_S * SAMPLE_RATE)
    clips = []
    for start in range(0, total, per_clip):
        n = min(per_clip, total - start)
        t = np.arange(n) / SAMPLE_RATE
        f0 = 120 + 30 * np.sin(2 * math.pi * 0.3 * t + rng.uniform(0, 6))
        phase = 2 * math.pi * np.cumsum(f0) / SAMPLE_RATE
        voiced = sum(np.sin(k * phase) / k for k in range(1, 8))
        syllables = 0.5 * (1 + np.sin(2 * math.pi * 4 * t + rng.uniform(0, 6)))
        audio = 0.05 * voiced * syllables + 0.005 * rng.standard_normal(n)
        clips.append(Clip(f"synthetic-{len(clips) + 1:02d}", audio.astype(np.float32), None))
    return clips
