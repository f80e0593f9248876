"""faster-whisper with nothing of gpubench: the peer figure for `gpubench run whisper`'s faster-whisper setups.

Plain WhisperModel / BatchedInferencePipeline on a CTranslate2 model folder and audio saved as .npy (16 kHz
float32), timed with time.perf_counter as a user would time it: load, a warm-up on the first 60 s, then every
clip under one clock. With --fixed-tokens N (a random-weight model), the decoding options are written out here
as gpubench's workloads/whisper/engines.py sets them, so both do the same work: fixed 30 s windows, N text
tokens per window. One JSON line per setup on stdout; with --harness, the harness's rows of the same setups
beside them and the harness's speed over the bare one.

    python3 benchmarks/whisper_bare.py --model fw-turbo-fp16-b16=/path/turbo-ct2 --model ...=... \
        --audio /tmp/audio.npy --fixed-tokens 100 [--harness results.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

SAMPLE_RATE = 16000
# setup -> (mode, compute type), as in the study (gpubench's workloads/whisper SETUPS)
SETUPS = {
    "fw-turbo-fp16-b16": ("batched", "float16"),
    "fw-large-v3-fp16-b16": ("batched", "float16"),
    "fw-large-v3-int8-b16": ("batched", "int8_float16"),
    "fw-large-v3-fp16-seq": ("sequential", "float16"),
}


def decoding_options(model, mode: str, fixed_tokens: int | None, samples: int, language: str) -> dict:
    options = {"language": language}
    if fixed_tokens is None:
        return options
    options.update(without_timestamps=True, temperature=0.0, no_speech_threshold=None)
    start = 1 + (3 if model.model.is_multilingual else 1)  # the prompt: SOT (language, task), no-timestamps
    if mode == "batched":
        # CTranslate2 decodes min(max_length // 2, max_length - prompt + 1) tokens
        options["max_new_tokens"] = max(fixed_tokens - 1, 2 * fixed_tokens - start)
        seconds = samples / SAMPLE_RATE
        starts = [30.0 * i for i in range(int(-(-seconds // 30)))]
        options.update(vad_filter=False, clip_timestamps=[{"start": t, "end": min(t + 30, seconds)} for t in starts])
    else:
        options["initial_prompt"] = list(range(fixed_tokens))
        options["max_new_tokens"] = max(fixed_tokens - 1, 2 * fixed_tokens - (1 + fixed_tokens + start))
    return options


def transcriber(setup: str, folder: str, args):
    """(transcribe(audio) -> tokens decoded, model load seconds, compute type) for `setup` on `folder`'s model."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    mode, compute_type = SETUPS[setup]
    if args.device == "cpu":
        compute_type = {"float16": "float32", "int8_float16": "int8"}[compute_type]
    started = time.perf_counter()
    model = WhisperModel(folder, device=args.device, compute_type=compute_type, cpu_threads=args.cpu_threads)
    load_s = time.perf_counter() - started
    pipeline = BatchedInferencePipeline(model=model) if mode == "batched" else None

    def transcribe(audio) -> int:
        options = decoding_options(model, mode, args.fixed_tokens, len(audio), args.language)
        if pipeline is not None:
            segments, _ = pipeline.transcribe(audio, batch_size=args.batch_size, **options)
        else:
            segments, _ = model.transcribe(audio, beam_size=args.beam_size, **options)
        return sum(len(segment.tokens) for segment in segments)  # a lazy generator: the work happens here

    return transcribe, load_s, compute_type


def run(setup: str, folder: str, clips: list, args) -> dict:
    transcribe, load_s, compute_type = transcriber(setup, folder, args)
    transcribe(clips[0][: int(args.warmup_s * SAMPLE_RATE)])
    started = time.perf_counter()
    tokens = sum(transcribe(clip) for clip in clips)
    transcribe_s = time.perf_counter() - started
    audio_s = sum(len(clip) for clip in clips) / SAMPLE_RATE
    return {"setup": setup, "realtime_factor": audio_s / transcribe_s, "transcribe_s": transcribe_s,
            "audio_s": audio_s, "model_load_s": load_s, "decoded_tokens": tokens, "compute_type": compute_type}


def harness_rows(path: str) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {}
    with open(path) as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("kind") == "result" and record.get("status") == "ok":
                rows.setdefault(record["setup"], []).append(record["metrics"]["realtime_factor"]["value"])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, metavar="SETUP=FOLDER")
    parser.add_argument("--audio", required=True, help=".npy of 16 kHz float32 samples (one clip), .npz: one a key")
    parser.add_argument("--fixed-tokens", type=int, default=None, help="random-weight model: text tokens per window")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--language", default="en")
    parser.add_argument("--cpu-threads", type=int, default=0)
    parser.add_argument("--harness", help="gpubench's results.jsonl of the same setups: the overhead beside each")
    args = parser.parse_args()
    models = [item.partition("=")[::2] for item in args.model]
    for setup, folder in models:
        if setup not in SETUPS or not folder:
            print(f"whisper_bare: --model {setup}={folder}: SETUP=FOLDER, SETUP one of {', '.join(SETUPS)}",
                  file=sys.stderr)
            return 2
    import numpy as np

    loaded = np.load(args.audio)
    clips = [loaded] if isinstance(loaded, np.ndarray) else [loaded[key] for key in loaded.files]
    harness = harness_rows(args.harness) if args.harness else {}
    for setup, folder in models:
        row = run(setup, folder, clips, args)
        if setup in harness:
            row["harness_realtime_factor"] = harness[setup]
            row["harness_vs_bare_pct"] = 100 * (max(harness[setup]) / row["realtime_factor"] - 1)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
