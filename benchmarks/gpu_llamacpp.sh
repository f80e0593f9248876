#!/usr/bin/env bash
# ollama-vs-vllm's GGUF half on the H200: llama.cpp's llama-server (Ollama's runner without Ollama) with CUDA, in
# device calls of at most ~9 minutes each (docs/gpu-llamacpp.md has the call plan).
#
#   bash benchmarks/gpu_llamacpp.sh next       # the next part this warm machine has not done yet
#   bash benchmarks/gpu_llamacpp.sh PART...    # build, gguf, q4km, q8, gsm8k, peer: those parts, in that order
#
#   build  llama.cpp with CUDA for sm_90 into /tmp/llama.cpp: the carried prebuilt prefix unpacked
#          (.llamacpp-h200/llama.cpp-prebuilt.tar.xz: seconds), else compiled by tools/llamacpp_build.sh from the
#          carried trimmed source (.llamacpp-h200/llama.cpp-src.tar.xz: ~5 min on the 16 cores)
#   gguf   the random-weight checkpoint at Qwen2.5-7B's shape, converted to a bf16 GGUF and quantized to Q4_K_M and
#          Q8_0 with llama.cpp's own tools, each step timed (~/.cache/gpubench/gguf, where gpubench run finds them)
#   q4km   gpubench run ollama-vs-vllm --setups llamacpp-q4km-u1,-u4,-u16 --weights random --price 3.86
#   q8     the same for the Q8_0 GGUF
#   gsm8k  llamacpp-q4km-gsm8k and llamacpp-q8-gsm8k, with vllm-bf16-gsm8k in the same run when vLLM is unpacked
#          on this machine (/tmp/site, benchmarks/gpu_vllm_env.sh), so the run derives their disagreements
#   peer   benchmarks/llamacpp_peer.py on both GGUFs: llama-bench's tg against loadgen's decode at 1 user
#
# SMOKE=1 runs the same parts at the smoke size on a machine without a GPU (the tiny GGUF, `gpubench run --smoke`),
# to try the script itself (GPU_LLAMACPP_WORK and GPU_LLAMACPP_PREFIX move its two /tmp folders). Each part's run
# time is capped at PART_LIMIT_S (default 500 s). What a call carries is copied to /tmp/gpubench-llamacpp/carried
# first (a carried folder is gone in the next call; /tmp stays while the machine is warm), and a part done leaves
# /tmp/gpubench-llamacpp/<part>.done. Results: $OUT/llamacpp-<parts>-<time>.tgz (records, run folders, logs,
# timings) and $OUT/llamacpp-summary.txt (a line per part, appended across calls).
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
WORK=${GPU_LLAMACPP_WORK:-/tmp/gpubench-llamacpp}; mkdir -p "$WORK/carried" "$WORK/results"
PREFIX=${GPU_LLAMACPP_PREFIX:-/tmp/llama.cpp}
PARTS=(build gguf q4km q8 gsm8k peer)
LIMIT_S=${PART_LIMIT_S:-500}
PRICE=${PRICE:-3.86}  # the posts' H100 PCIe rate, so the cost columns exist
SHAPE=study RUN_SIZE=(--weights random)
[ "${SMOKE:-0}" = 1 ] && SHAPE=tiny RUN_SIZE=(--smoke)
for f in .llamacpp-h200/*; do [ -f "$f" ] && cp "$f" "$WORK/carried/"; done
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH  # the device's cmake, ninja and nvcc
# the CUDA libraries, and ggml's beside the programs (a prebuilt tree from a plain CMake build has no $ORIGIN rpath)
export LD_LIBRARY_PATH=$PREFIX/bin:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUBENCH_LLAMACPP_DIR=$PREFIX
# shellcheck source=benchmarks/gpu_python_env.sh
source "$(dirname "$0")/gpu_python_env.sh" || exit 1

summary() { echo "$*" | tee -a "$WORK/summary.txt"; }

part_build() {
  if [ -f "$WORK/carried/llama.cpp-prebuilt.tar.xz" ]; then
    rm -rf "$PREFIX" "$PREFIX.unpacked" \
      && python3 - "$WORK/carried/llama.cpp-prebuilt.tar.xz" "$PREFIX.unpacked" <<'PY' \
      && mv "$PREFIX.unpacked/llama.cpp" "$PREFIX" && rm -rf "$PREFIX.unpacked" || return 1
import sys, tarfile  # no xz program on the machine: python3's lzma
with tarfile.open(sys.argv[1]) as tar:
    tar.extractall(sys.argv[2], filter="fully_trusted")  # symlinks between the shared libraries
PY
  elif [ -f "$WORK/carried/llama.cpp-src.tar.xz" ]; then
    bash tools/llamacpp_build.sh --cuda 90 --source "$WORK/carried/llama.cpp-src.tar.xz" --prefix "$PREFIX" \
      --jobs "$(nproc)" >"$WORK/results/build.log" 2>&1 || { tail -n 30 "$WORK/results/build.log"; return 1; }
  else
    echo "nothing to build from: carry .llamacpp-h200/llama.cpp-src.tar.xz (or llama.cpp-prebuilt.tar.xz)"
    return 3
  fi
  cp "$PREFIX/build-info.json" "$WORK/results/"
  "$PREFIX/bin/llama-server" --version >"$WORK/results/llama-server-version.txt" 2>&1
  "$PREFIX/bin/llama-bench" --list-devices >>"$WORK/results/llama-server-version.txt" 2>&1
  [ "$SHAPE" = tiny ] || grep -q CUDA0 "$WORK/results/llama-server-version.txt" || {
    echo "llama.cpp finds no CUDA device:"; cat "$WORK/results/llama-server-version.txt"; return 4; }
}

part_gguf() {
  python3 - "$SHAPE" <<'PY' 2>&1 | tee "$WORK/results/gguf.txt"
import json, sys
from gpubench.servers import gguf
from gpubench.servers.llamacpp import find
from gpubench.servers.tiny_model import QWEN25_7B, TINY

install = find()
shape = QWEN25_7B if sys.argv[1] == "study" else TINY
made = {quant: gguf.prepare(shape, quant, install, progress=lambda *a, **k: print(k.get("message"), flush=True))
        for quant in ("Q4_K_M", "Q8_0")}
print(json.dumps({quant: m.info() for quant, m in made.items()}, indent=2))
PY
  [ "${PIPESTATUS[0]}" = 0 ]
}

run_setups() {  # $1: a name for the files, $2: the setups
  timeout -s INT -k 30 "$LIMIT_S" gpubench run ollama-vs-vllm --setups "$2" "${RUN_SIZE[@]}" --price "$PRICE" \
    --results-dir "$WORK/results/runs" >"$WORK/results/$1.jsonl" 2>"$WORK/results/$1.err"
}

part_q4km() { run_setups q4km llamacpp-q4km-u1,llamacpp-q4km-u4,llamacpp-q4km-u16; }
part_q8() { run_setups q8 llamacpp-q8-u1,llamacpp-q8-u4,llamacpp-q8-u16; }

part_gsm8k() {
  local setups=llamacpp-q4km-gsm8k,llamacpp-q8-gsm8k
  if [ -d /tmp/site ] && ls /tmp/site/.unpacked-* >/dev/null 2>&1; then
    # shellcheck source=benchmarks/gpu_vllm_env.sh
    source "$(dirname "$0")/gpu_vllm_env.sh" && setups=$setups,vllm-bf16-gsm8k
  fi
  run_setups gsm8k "$setups"
}

part_peer() {
  timeout -s INT -k 30 "$LIMIT_S" python3 benchmarks/llamacpp_peer.py --shape "$SHAPE" --quant Q4_K_M --quant Q8_0 \
    --out "$WORK/results/peer" 2>"$WORK/results/peer.err" | tee "$WORK/results/peer.txt"
  [ "${PIPESTATUS[0]}" = 0 ]
}

wanted=()
for arg in "$@"; do
  if [ "$arg" = next ]; then
    for p in "${PARTS[@]}"; do [ -f "$WORK/$p.done" ] || { wanted+=("$p"); break; }; done
  elif [[ " ${PARTS[*]} " == *" $arg "* ]]; then
    wanted+=("$arg")
  else
    echo "gpu_llamacpp.sh: unknown part $arg (parts: ${PARTS[*]}, or next)"; exit 2
  fi
done
[ ${#wanted[@]} -eq 0 ] && { echo "gpu_llamacpp.sh: every part is done on this machine (rm $WORK/*.done to redo)";
  exit 0; }
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader >"$WORK/results/gpu.txt"
fi
rc=0
for p in "${wanted[@]}"; do
  t0=$SECONDS
  "part_$p"; code=$?
  summary "$(date -u +%H:%M:%S) $p: exit $code after $((SECONDS - t0)) s"
  if [ "$code" = 0 ]; then touch "$WORK/$p.done"; else rc=$code; break; fi
done
name="llamacpp-$(IFS=-; echo "${wanted[*]}")-$(date +%H%M%S)"
tar czf "$OUT/$name.tgz" -C "$WORK/results" . && cp "$WORK/summary.txt" "$OUT/llamacpp-summary.txt"
exit "$rc"
