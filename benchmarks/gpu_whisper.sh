#!/usr/bin/env bash
# whisper on one H200 (the lead's wrapper has installed gpubench; missing wheels are on PYTHONPATH).
# What runs where: the H200 has CUDA 13 only and CTranslate2's GPU build needs CUDA 12 (libcublas.so.12),
# so only the transformers setup runs here: large-v3 shapes, random weights, synthetic speech-like audio,
# speed and NVML peak memory only (no WER). faster-whisper is proven on the CPU (smoke + tests, real tiny.en).
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
# A faster-whisper setup under --weights random: a 'skipped' row with its reason, never a number.
gpubench run whisper --weights random --setups fw-large-v3-fp16-b16 --set synthetic_audio_s=60 \
  --results-dir "$OUT/whisper/results" >"$OUT/whisper/fw-random.jsonl" 2>"$OUT/whisper/fw-random.err"
echo "fw exit: $?"
grep '"kind":"result"' "$OUT/whisper/hf.jsonl" "$OUT/whisper/fw-random.jsonl" | cut -c1-600
tail -5 "$OUT/whisper/hf.err"
