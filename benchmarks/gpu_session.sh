#!/usr/bin/env bash
# One device call that runs several benchmarks/gpu_<x>.sh scripts: installs what the GPU machine lacks
# (wheels carried in .whl/), installs gpubench without its dependencies, then runs each lane of
# scripts on its own GPU, lanes in parallel, scripts in a lane one after another.
#
#   bash benchmarks/gpu_session.sh "finetune cold_start" "sdxl whisper"   # lane 1 on GPU 0, lane 2 on GPU 1
#   bash benchmarks/gpu_session.sh "STEPS=20 GPUBENCH_ARGS=--setups=lora-mb4 finetune"   # settings for a lane
#
# A lane named "all:<script>" gets every GPU (ddp). The scripts write under $OUT/<workload>/; the device
# tool brings back at most 8 files, so everything is packed into $OUT/gpu-results.tgz at the end.
set -u
FINAL=${OUT:-./gpu-out}; mkdir -p "$FINAL"
export OUT=/tmp/gpu-work; rm -rf "$OUT"; mkdir -p "$OUT"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm --format=csv
  nvidia-smi topo -m
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
  nproc; free -g | head -2; df -h / | tail -1
} > "$OUT/env.txt" 2>&1

lane=0
pids=()
for scripts in "$@"; do
  (
    for script in $scripts; do
      if [[ $script == *=* ]]; then export "${script?}"; continue; fi  # NAME=value: for the lane's later scripts
      if [[ $script == all:* ]]; then script=${script#all:}; unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$lane; fi
      start=$(date +%s)
      timeout "${GPU_SCRIPT_TIMEOUT:-540}" bash "benchmarks/gpu_${script}.sh" > "$OUT/${script}.log" 2>&1
      echo "gpu_${script}.sh exit $? after $(( $(date +%s) - start )) s on GPU ${CUDA_VISIBLE_DEVICES:-all}" | tee -a "$OUT/summary.txt"
    done
  ) &
  pids+=($!)
  lane=$((lane + 1))
done
wait "${pids[@]}"
tar czf "$FINAL/gpu-results.tgz" -C "$OUT" .
cp "$OUT/summary.txt" "$OUT/env.txt" "$FINAL/"
cat "$OUT/summary.txt"; for log in "$OUT"/*.log; do echo "== $log"; tail -n 8 "$log"; done
