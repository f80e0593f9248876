#!/usr/bin/env bash
# One device call: gpubench's sdxl workload, all four setups (eager/compiled x batch 1/4), SDXL base's real
# shapes with random weights (no hub there), 1024 x 1024, 30 steps, fp16, the fp16-fix VAE's config.
# Everything lands in $OUT/sdxl (or ./gpu-out/sdxl).
#
# Shortened for a ~6 minute budget on one H200: 4 timed images at batch 1 and 8 at batch 4 (the study: 8
# and 16), after the same one warm-up generation. Seconds per image is wall time / images over whole
# 30-step generations, so fewer images change only its spread. The compile times are not shortened: each
# compiled setup compiles in its own process from an empty inductor/Triton cache (cold, as on a new
# machine; the workload does that, see workloads/sdxl.py).
#
# $ per 1,000 images needs this machine's hourly price: set $SDXL_PRICE; without it no cost is recorded
# (a cost at another GPU's price would be recorded as this one's).
set -ux
OUT=${OUT:-./gpu-out}/sdxl; mkdir -p "$OUT"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "affinity: $(nproc) CPUs"
  python3 -c "import torch, diffusers, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'diffusers', diffusers.__version__, 'transformers', transformers.__version__)"
} 2>&1 | tee "$OUT/env.txt"
# SIGINT at the limit: the runner records what finished and closes the run as interrupted.
time timeout -s INT "${SDXL_LIMIT_S:-350}" gpubench run sdxl --weights random --results-dir /tmp/gpubench-results-sdxl \
  ${SDXL_PRICE:+--price "$SDXL_PRICE"} --set timed_images_b1="${SDXL_IMAGES_B1:-4}" --set timed_images_b4="${SDXL_IMAGES_B4:-8}" \
  ${GPUBENCH_ARGS:-} >"$OUT/results.jsonl" 2>"$OUT/gpubench.err"
echo "gpubench exit: $?"
cp /tmp/gpubench-results-sdxl/*/config.json /tmp/gpubench-results-sdxl/*/run.log "$OUT/" 2>/dev/null
python3 - "$OUT/results.jsonl" <<'PY' | tee "$OUT/table.txt"
import json, sys
cols = ["s_per_image", "images_per_hour", "usd_per_1k_images", "peak_mem_gib", "warmup_s", "compile_s", "load_s",
        "saved_s_per_image", "time_saved_pct", "break_even_images", "throughput_vs_b1_pct",
        "achieved_tflops", "pct_of_peak"]
rows, derived = {}, {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "result":
        rows[r["setup"]] = r
    elif r.get("kind") == "derived":
        derived.setdefault(r["setup"], {}).update({k: v["value"] for k, v in r["metrics"].items()})
print("setup\t" + "\t".join(cols))
for setup, r in rows.items():
    if r["status"] != "ok":
        print(f"{setup}\t{r['status']} {r.get('error')}")
        continue
    m = {**{k: v["value"] for k, v in r["metrics"].items()}, **derived.get(setup, {})}
    print(setup + "\t" + "\t".join(f"{m[c]:.4g}" if c in m else "-" for c in cols))
    print("  info:", json.dumps(r.get("info", {})))
PY
