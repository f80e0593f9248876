#!/usr/bin/env bash
# whisper on one H200 (the lead's wrapper has installed gpubench; missing wheels are on PYTHONPATH).
# The transformers setup alone (2026-11-30): large-v3 shapes, random weights, synthetic speech-like audio,
# speed and NVML peak memory only (no WER). PyPI's CTranslate2 needs CUDA 12 (libcublas.so.12) and the H200 has
# CUDA 13 only: benchmarks/gpu_whisper_ct2.sh runs all five setups with a CTranslate2 built for CUDA 13.
# Shortened: 600 s of synthetic audio instead of the 8,905 s TED set (the per-window work is the same:
# 30 s windows, batch 16, beam 5, 100 decoded tokens per window). Budget: about 2 minutes.
set -x
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT/whisper"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  python3 -c "import pynvml; print('pynvml ok')"
  python3 -c "import ctranslate2; print('ctranslate2', ctranslate2.__version__, 'cuda devices', ctranslate2.get_cuda_device_count())"
} >"$OUT/whisper/env.txt" 2>&1
gpubench run whisper --weights random --setups hf-large-v3-fp16-b16 --repeats 2 \
  --set synthetic_audio_s=600 --results-dir "$OUT/whisper/results" \
  >"$OUT/whisper/hf.jsonl" 2>"$OUT/whisper/hf.err"
echo "hf exit: $?"
grep '"kind":"result"' "$OUT/whisper/hf.jsonl" | cut -c1-600
tail -5 "$OUT/whisper/hf.err"
