"""The study's three ways to run Whisper, each built once and then called per clip: audio -> text.

- faster-whisper BatchedInferencePipeline.transcribe(audio, language, batch_size) (VAD, batched windows);
- faster-whisper WhisperModel.transcribe(audio, language, beam_size) (sequential long-form decoding);
  on a random-weight model (`fixed_tokens`), both decode the same work per 30 s window as real speech does:
  fixed 30 s windows (no VAD: it finds no speech in synthetic audio), exactly `fixed_tokens` new text tokens
  per window (the random checkpoint never picks end-of-text or another special token: random_weights says how;
  a timestamp token would split windows and move the sequential seek at random), faster-whisper's default
  suppress list as real runs have it, one temperature (random text fails every quality check,
  so fallbacks would re-decode each window) and no no-speech skipping (the window is decoded all the same).
  Sequential decoding stays conditioned on the previous window's text, as for real speech; its first window
  gets `fixed_tokens` tokens of prompt too, so that every window's prompt is long enough for one
  max_new_tokens to mean exactly `fixed_tokens` (max_new_tokens_for says why);
- transformers pipeline("automatic-speech-recognition", chunk_length_s=30, batch_size=16), SDPA, with
  the pipeline's own generation defaults (beam 5, at most 256 new tokens per window).
"""

from __future__ import annotations

from pathlib import Path

# CTranslate2 has no float16 kernels on the CPU: the nearest CPU type keeps CPU runs possible.
CPU_COMPUTE_TYPE = {"float16": "float32", "int8_float16": "int8"}


def faster_whisper(model_path: str, mode: str, compute_type: str, device: str, config,
                   fixed_tokens: int | None = None):
    """(transcribe, facts) for faster-whisper on `device` (resolved: "cpu", "cuda" or "cuda:N")."""
    import ctranslate2
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    index = int(device.partition(":")[2] or 0)
    if device == "cpu":
        compute_type = CPU_COMPUTE_TYPE.get(compute_type, compute_type)
    model = WhisperModel(model_path, device=device.partition(":")[0], device_index=index, compute_type=compute_type,
                         cpu_threads=config.cpu_threads)
    facts = {"engine": f"faster-whisper {mode}", "device": device, "compute_type": compute_type,
             "ctranslate2": ctranslate2.__version__}
    options = {"language": config.language}
    if fixed_tokens is not None:
        facts["random_weights_decoding"] = (f"{fixed_tokens} text tokens per 30 s window (special tokens "
                                            "suppressed), no timestamps, temperature 0 only"
                                            + (", fixed 30 s windows (no VAD)" if mode == "batched" else ""))
    if mode == "batched":
        pipeline = BatchedInferencePipeline(model=model)

        def transcribe(audio) -> str:
            fixed = fixed_work(model, mode, fixed_tokens, len(audio)) if fixed_tokens is not None else {}
            segments, _ = pipeline.transcribe(audio, batch_size=config.batch_size, **options, **fixed)
            return joined(transcribe, segments)
        facts["decoding"] = f"batch_size={config.batch_size}, language={config.language}"
    else:
        def transcribe(audio) -> str:
            fixed = fixed_work(model, mode, fixed_tokens, len(audio)) if fixed_tokens is not None else {}
            segments, _ = model.transcribe(audio, beam_size=config.beam_size, **options, **fixed)
            return joined(transcribe, segments)
        facts["decoding"] = f"beam_size={config.beam_size}, language={config.language}"
    transcribe.decoded_tokens = 0
    return transcribe, facts


def fixed_work(model, mode: str, tokens: int, samples: int) -> dict:
    """faster-whisper's transcribe options that make a random-weight `model` decode exactly `tokens` text tokens in
    every 30 s window of `samples` of audio (the module's docstring says why each)."""
    options = {"without_timestamps": True, "temperature": 0.0, "no_speech_threshold": None}
    # each window's prompt: <|startoftranscript|>(, language, task), <|notimestamps|>; a sequential window's adds
    # <|startofprev|> and the previous text (the first window's: `tokens` text tokens)
    start = 1 + (3 if model.model.is_multilingual else 1)
    if mode == "batched":
        options.update(max_new_tokens=max_new_tokens_for(tokens, start), vad_filter=False,
                       clip_timestamps=fixed_windows(samples))
    else:
        options.update(initial_prompt=list(range(tokens)),
                       max_new_tokens=max_new_tokens_for(tokens, 1 + tokens + start))
    return options


def joined(transcribe, segments) -> str:
    """The segments' text (decoding them as they come: faster-whisper's segments are a lazy generator), counting
    their tokens into `transcribe.decoded_tokens`."""
    texts = []
    for segment in segments:
        texts.append(segment.text)
        transcribe.decoded_tokens += len(segment.tokens)
    return " ".join(texts)


def max_new_tokens_for(tokens: int, prompt: int) -> int:
    """faster-whisper's max_new_tokens that makes CTranslate2 decode exactly `tokens` tokens after a prompt of
    `prompt` tokens or more, end-of-text never chosen. faster-whisper asks for max_length = prompt +
    max_new_tokens; CTranslate2's Whisper decodes min(max_length // 2, max_length - prompt + 1) tokens then
    (src/models/whisper.cc: half the length at most, and the prompt's last token is the first step), so the
    answer depends on the prompt: max_new_tokens + 1 once the prompt is longer than `tokens`, fewer before."""
    return max(tokens - 1, 2 * tokens - prompt)


def fixed_windows(samples: int, window_s: float = 30.0) -> list[dict]:
    """Back-to-back windows of `window_s` over `samples` of 16 kHz audio, in faster-whisper's clip_timestamps form."""
    from gpubench.workloads.whisper.audio import SAMPLE_RATE

    seconds = samples / SAMPLE_RATE
    starts = [i * window_s for i in range(int(-(-seconds // window_s)))]
    return [{"start": start, "end": min(start + window_s, seconds)} for start in starts]


def transformers_pipeline(model_path: str | None, size: str, dtype_name: str, device: str, config, scratch: Path):
    """The transformers ASR pipeline on a checkpoint folder, or on random weights at `size`'s shapes, on `device`
    (resolved)."""
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, pipeline

    if config.cpu_threads:
        torch.set_num_threads(config.cpu_threads)
    # fp16 matmuls on a CPU are slow or missing: CPU runs compute in fp32.
    dtype = getattr(torch, dtype_name) if device.startswith("cuda") else torch.float32
    generate = {"task": "transcribe"}
    if model_path is not None:
        from transformers import AutoProcessor

        model = WhisperForConditionalGeneration.from_pretrained(model_path, dtype=dtype, attn_implementation="sdpa")
        processor = AutoProcessor.from_pretrained(model_path)
        tokenizer, features = processor.tokenizer, processor.feature_extractor
        if model.generation_config.is_multilingual:
            generate["language"] = config.language
        described = model_path
    else:
        from gpubench.workloads.whisper import random_weights as whisper_random

        # Built in its final dtype on its device: an fp32 copy freed into torch's cache would show up in
        # the NVML peak (which counts what torch reserves), and a CPU init of 1.5B weights takes minutes.
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            with torch.device(device):
                model = whisper_random.build_model(size)
        finally:
            torch.set_default_dtype(default_dtype)
        tokenizer = whisper_random.write_tokenizer(size, scratch / "tokenizer")
        features = WhisperFeatureExtractor(feature_size=whisper_random.SHAPES[size]["num_mel_bins"])
        generate["language"] = config.language
        # Random weights rarely emit end-of-text: decode a fixed, speech-like number of tokens per window.
        generate["min_new_tokens"] = generate["max_new_tokens"] = config.random_tokens_per_window
        described = f"random weights, {size} shapes"
    model.eval()
    asr = pipeline("automatic-speech-recognition", model=model, tokenizer=tokenizer, feature_extractor=features,
                   chunk_length_s=config.chunk_length_s, batch_size=config.batch_size, device=device)

    def transcribe(audio) -> str:
        from gpubench.workloads.whisper.audio import SAMPLE_RATE

        with torch.inference_mode():
            out = asr({"raw": audio, "sampling_rate": SAMPLE_RATE}, batch_size=config.batch_size,
                      generate_kwargs=generate)
        return out["text"]

    transcribe.decoder_probe = lambda audio: decoder_bandwidth(model, transcribe, audio, device)
    facts = {"engine": "transformers pipeline", "device": device, "compute_type": str(dtype).removeprefix("torch."),
             "attention": model.config._attn_implementation, "model": described,
             "decoding": f"chunk_length_s={config.chunk_length_s}, batch_size={config.batch_size}, "
                         f"pipeline generation defaults (num_beams=5, max_new_tokens=256), {generate}"}
    return transcribe, facts


def decoder_bandwidth(model, transcribe, audio, device: str) -> dict:
    """One more, untimed transcription of `audio` with the decoder's forward calls timed (synchronized on a GPU):
    achieved_gbps = what its steps must read (decoder weights once + each row's cross-attention KV over the
    encoder's 1500 frames and its self-attention KV so far, gpubench/measure/bandwidth.py) over their summed time."""
    from gpubench.measure import bandwidth, timing

    decoder, config = model.model.decoder, model.config
    weight_bytes = sum(p.numel() * p.element_size() for p in decoder.parameters())
    dtype_bytes = next(decoder.parameters()).element_size()
    kv_per_token = bandwidth.kv_bytes_per_token(config.decoder_layers, 1, config.d_model, dtype_bytes)
    steps = {"bytes": 0.0, "seconds": 0.0, "calls": 0, "rows": 0}
    clock = timing.Timed(None, device)  # a lap from each call's start to its end, both waited for

    def before(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        cache = kwargs.get("past_key_values")
        past = cache.get_seq_length() if cache is not None else 0
        context = config.max_source_positions + past + ids.shape[1]
        steps["bytes"] += bandwidth.decode_bytes_per_step(weight_bytes, ids.shape[0], context, kv_per_token)
        steps["rows"] += ids.shape[0]
        clock.lap()  # the time since the last call's end is not the decoder's

    def after(module, args, kwargs, output):
        steps["seconds"] += clock.lap()
        steps["calls"] += 1

    hooks = [decoder.register_forward_pre_hook(before, with_kwargs=True),
             decoder.register_forward_hook(after, with_kwargs=True)]
    try:
        with clock:
            transcribe(audio)
    finally:
        for hook in hooks:
            hook.remove()
    if not steps["calls"]:
        return {}
    return {"achieved_gbps": bandwidth.achieved_gbps(steps["bytes"], steps["seconds"]),
            "decoder_step_ms": 1e3 * steps["seconds"] / steps["calls"],
            "info": {"decoder_steps": steps["calls"], "rows_per_step": steps["rows"] / steps["calls"],
                     "bytes_per_step": steps["bytes"] / steps["calls"],
                     "decoder_weight_bytes": weight_bytes, "kv_bytes_per_token": kv_per_token}}
