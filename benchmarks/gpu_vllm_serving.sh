#!/usr/bin/env bash
# One device call of the serving run on the H200 (docs/gpu-serving.md). Gathers the carried vLLM pieces and,
# once all are there, unpacks them (gpu_vllm_env.sh); checks once per machine that vLLM imports and picks
# FlashAttention 3; then runs each study named, one after another, each under STUDY_LIMIT_S (default 500 s).
#
#   bash benchmarks/gpu_vllm_serving.sh                                   # a call that only brings a piece
#   bash benchmarks/gpu_vllm_serving.sh "vllm-fp8 --setups bf16-c1,fp8-c1" "vllm-serving"
#
# Each argument is a workload and its `gpubench run` flags (--weights random is added). Records, run folders
# and server-log highlights are packed into $OUT/vllm-serving-<time>.tgz; a summary line per study is printed.
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
# shellcheck source=benchmarks/gpu_vllm_env.sh
source "$(dirname "$0")/gpu_vllm_env.sh"
if [ "$VLLM_READY" != 1 ]; then
  [ $# -eq 0 ] && exit 0
  echo "vLLM is not unpacked yet: no study run"; exit 3
fi
WORK=/tmp/vllm-serving; mkdir -p "$WORK"
if [ ! -f "$WORK/check.ok" ]; then
  python3 - <<'PY' 2>&1 | tee "$WORK/check.txt"
import time; t = time.time()
import vllm, vllm.entrypoints.openai.api_server
from vllm.platforms import current_platform as p
print("vllm", vllm.__version__, "platform", type(p).__name__, p.device_type, "import", round(time.time() - t, 1), "s")
import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
from vllm.vllm_flash_attn.flash_attn_interface import FA2_AVAILABLE, FA3_AVAILABLE
print("FA2", FA2_AVAILABLE, "FA3", FA3_AVAILABLE)
import vllm._C_stable_libtorch, gpubench; print("gpubench", gpubench.__version__)
PY
  grep -q "FA3 True$" "$WORK/check.txt" && grep -q "^gpubench " "$WORK/check.txt" \
    || { echo "VLLM CHECK FAILED"; cp "$WORK/check.txt" "$OUT/"; exit 4; }
  touch "$WORK/check.ok"
fi
for study in "$@"; do
  read -r -a words <<<"$study"
  name="${words[0]}-$(date +%H%M%S)"; t0=$SECONDS
  timeout -s INT -k 30 "${STUDY_LIMIT_S:-500}" gpubench run "${words[@]}" --weights random \
    --results-dir "$WORK/runs" >"$WORK/$name.jsonl" 2>"$WORK/$name.err"
  echo "$study: exit $? after $((SECONDS - t0)) s" | tee -a "$WORK/summary.txt"
done
[ $# -gt 0 ] && tar czf "$OUT/vllm-serving-$(date +%H%M%S).tgz" -C "$WORK" . && cp "$WORK/summary.txt" "$OUT/"
exit 0
