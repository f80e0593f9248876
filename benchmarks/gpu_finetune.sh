#!/usr/bin/env bash
# GPU proof for the finetune workload: all six setups (full / LoRA / QLoRA at micro-batch 4x4 and 8x2) at the
# post's size on one GPU. No hub on the device machine, so --weights random: Qwen2.5-1.5B-Instruct's shape
# (1,543.7 M parameters) with random values, and the synthetic alpaca-format set with the post's token lengths
# (188 tokens per example on average, cut at 512). Speed and memory compare with the post; held-out loss does not.
# Shortened: 40 optimizer steps of 16 examples instead of 250 (STEPS=250 for the whole epoch). tokens/s and peak
# memory are per-step numbers and stay the study's (the first steps' warm-up weighs 6x more); train_s and the cost
# scale with the steps. PyTorch's allocator is capped at the L40S's 44.4 GiB (MEMORY_LIMIT_GIB=0: the whole card),
# so full fine-tuning at micro-batch 8 runs out of memory as it did in the post.
# Needs bitsandbytes 0.50.2 importable for the QLoRA setups. Writes everything under $OUT/finetune/.
set -x
OUT=${OUT:-./gpu-out}
DEST="$OUT/finetune"
mkdir -p "$DEST"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, peft; print('torch', torch.__version__, 'cuda', torch.version.cuda,
    'transformers', transformers.__version__, 'peft', peft.__version__)"
  python3 -c "import bitsandbytes; print('bitsandbytes', bitsandbytes.__version__)"
} >"$DEST/env.txt" 2>&1
cat "$DEST/env.txt"
timeout "${BUDGET_S:-295}" gpubench run finetune --weights random --results-dir "$DEST/runs" \
  --set "steps=${STEPS:-40}" --set "memory_limit_gib=${MEMORY_LIMIT_GIB:-44.4}" ${GPUBENCH_ARGS:-} \
  >"$DEST/results.jsonl" 2>"$DEST/run.err"
echo "gpubench exit: $?"
grep -E '^\[|^  [a-z]|^\|' "$DEST/run.err" | tee "$DEST/summary.txt"
