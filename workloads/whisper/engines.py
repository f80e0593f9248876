"""The study's three ways to run Whisper, each built once and then called per clip: audio -> text.

- faster-whisper BatchedInferencePipeline.transcribe(audio, language, batch_size) (VAD, batched windows);
- faster-whisper WhisperModel.transcribe(audio, language, beam_size) (sequential long-form decoding);
- transformers pipeline("automatic-speech-recognition", chunk_length_s=30, batch_size=16), SDPA, with
  the pipeline's own generation defaults (beam 5, at most 256 new tokens per window).
"""

from __future__ import annotations

from pathlib import Path

from gpubench.measure import device as measure_device

# CTranslate2 has no float16 kernels on the CPU: the nearest CPU type keeps CPU runs possible.
CPU_COMPUTE_TYPE = {"float16": "float32", "int8_float16": "int8"}


def faster_whisper(model_path: str, mode: str, compute_type: str, device: str, config):
    import ctranslate2
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    device = measure_device.resolve(device, gpu_count=ctranslate2.get_cuda_device_count)
    if device == "cpu":
        compute_type = CPU_COMPUTE_TYPE.get(compute_type, compute_type)
    model = WhisperModel(model_path, device=device, compute_type=compute_type, cpu_threads=config.cpu_threads)
    facts = {"engine": f"faster-whisper {mode}", "device": device, "compute_type": compute_type}
    if mode == "batched":
        pipeline = BatchedInferencePipeline(model=model)

        def transcribe(audio) -> str:
            segments, _ = pipeline.transcribe(audio, language=config.language, batch_size=config.batch_size)
            return " ".join(segment.text for segment in segments)
        facts["decoding"] = f"batch_size={config.batch_size}, language={config.language}"
    else:
        def transcribe(audio) -> str:
            segments, _ = model.transcribe(audio, language=config.language, beam_size=config.beam_size)
            return " ".join(segment.text for segment in segments)
        facts["decoding"] = f"beam_size={config.beam_size}, language={config.language}"
    transcribe.torch_device = None  # CTranslate2 returns when its work is done; a torch wait would add a CUDA context
    return transcribe, facts


def transformers_pipeline(model_path: str | None, size: str, dtype_name: str, device: str, config, scratch: Path):
    """The transformers ASR pipeline on a checkpoint folder, or on random weights at `size`'s shapes."""
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, pipeline

    device = measure_device.resolve(device)
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

    transcribe.torch_device = device  # what a clock around it waits for
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
