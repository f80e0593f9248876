#!/usr/bin/env bash
# One device call: gpubench's train-compile at full size, then the study's bare script for the
# same four setups, then the comparison. Everything lands in $OUT (or ./gpu-out).
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
} | tee "$OUT/env.txt"
# Each side compiles from a cold inductor cache, so first-step times compare too.
TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) \
  gpubench run train-compile --results-dir /tmp/gpubench-results ${GPUBENCH_ARGS:-} >"$OUT/gpubench.jsonl" 2>"$OUT/gpubench.err"
echo "gpubench exit: $?"
cp /tmp/gpubench-results/*/config.json "$OUT/config.json"
[ "${STUDY:-1}" = 1 ] || exit 0  # STUDY=0: gpubench's run only, not the study's own script beside it
export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
for setup in "eager sdpa" "compile sdpa" "eager eager" "compile eager"; do
  python3 benchmarks/study_scripts/train_compile_study.py $setup >>"$OUT/study.jsonl" 2>>"$OUT/study.err" || echo "study $setup failed"
done
python3 benchmarks/compare_train_compile.py "$OUT/gpubench.jsonl" "$OUT/study.jsonl" | tee "$OUT/compare.txt"
