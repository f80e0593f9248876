#!/usr/bin/env bash
# ollama-vs-vllm's GGUF half on the H200: llama.cpp's llama-server (Ollama's runner without Ollama) with CUDA, in two
# device calls made back to back (docs/gpu-llamacpp.md has the plan, what each carries and the time estimates).
#
#   bash benchmarks/gpu_llamacpp.sh prepare    # call A: carry .llamacpp-h200 and .whl
#   bash benchmarks/gpu_llamacpp.sh measure    # call B: carry nothing
#
# prepare  starts llama.cpp's CUDA build for sm_90 (llama-server, llama-bench, llama-quantize) from the carried trimmed
#          source in the background, in a process session of its own (setsid: it outlives the call), CUDA_BUILD_JOBS
#          (13) jobs, into /tmp/llama.cpp; meanwhile builds a CPU-only llama-quantize (QUANTIZER_BUILD_JOBS, 3), writes
#          the random checkpoint at Qwen2.5-7B's shape and converts it to a bf16 GGUF with the source's own converter
#          (no llama.cpp program needed), then quantizes Q8_0 with the cores the build leaves (all of them once it is
#          done), and Q4_K_M, a K-quant of ~6x the CPU, after the build on every core. Ends when both GGUFs are made
#          (~/.cache/gpubench/gguf, where gpubench run finds them).
# measure  waits for the CUDA build (runs it again, resuming where it stopped, if it is neither running nor done),
#          checks that llama.cpp sees CUDA0 and the GGUFs are there, runs the eight llama.cpp setups in one
#          `gpubench run` (the Q4_K_M server, then the Q8_0 server; GSM8K_QUESTIONS, 200 by default: the study's 250
#          is the knob's other value), then llama-bench against loadgen at 1 user on both GGUFs
#          (benchmarks/llamacpp_peer.py, PEER_ROUNDS 2 of PEER_REPS 5, one round when the time left is short). All of
#          it within MEASURE_LIMIT_S (530): the run is stopped (SIGINT: what it finished is kept) before the peer's
#          minimum would not fit.
#
# Each call leaves $OUT/llamacpp-<call>.tgz (logs, timings, run folders, peer.json), $OUT/llamacpp-summary.txt (a
# line per step, both calls) and, from measure, the run's summary.md and peer.txt: 4 files at most.
# QUANTS (default "Q4_K_M Q8_0") picks the GGUFs prepare makes and measure checks; SETUPS (comma-separated, default
# the eight llama.cpp setups) what measure runs; PEER_ROUNDS=0 skips the peer. So one quantization can be measured
# again alone (docs/gpu-llamacpp.md).
# SMOKE=1 does the same at the smoke size without a GPU (a CPU build stands in for the CUDA one, the tiny GGUF,
# `gpubench run --smoke`), to try the script itself; GPU_LLAMACPP_WORK and GPU_LLAMACPP_PREFIX move its folders.
set -u
CALL=${1:-}
case "$CALL" in
  prepare|measure) ;;
  *) echo "usage: bash benchmarks/gpu_llamacpp.sh prepare|measure (docs/gpu-llamacpp.md)"; exit 2 ;;
esac
case "${GSM8K_QUESTIONS-200}" in
  ''|*[!0-9]*|0) echo "GSM8K_QUESTIONS=${GSM8K_QUESTIONS-}: a whole number, 1 or more"; exit 2 ;;
esac
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
WORK=${GPU_LLAMACPP_WORK:-/tmp/gpubench-llamacpp}
PREFIX=${GPU_LLAMACPP_PREFIX:-/tmp/llama.cpp}  # the CUDA build
QUANTIZER=$WORK/quantizer  # the CPU-only llama-quantize
RESULTS=$WORK/results-$CALL
CUDA_JOBS=${CUDA_BUILD_JOBS:-13}
QUANTIZER_JOBS=${QUANTIZER_BUILD_JOBS:-3}
PRICE=${PRICE:-3.86}  # the posts' H100 PCIe rate, so the cost columns exist
GSM8K_GIVEN=${GSM8K_QUESTIONS:+yes}
GSM8K_QUESTIONS=${GSM8K_QUESTIONS:-200}
PEER_ROUNDS=${PEER_ROUNDS:-2} PEER_REPS=${PEER_REPS:-5}
QUANTS=${QUANTS:-Q4_K_M Q8_0}
QUANT_ARGS=(); for quant in $QUANTS; do QUANT_ARGS+=(--quant "$quant"); done
ALL_SETUPS=llamacpp-q4km-u1,llamacpp-q4km-u4,llamacpp-q4km-u16,llamacpp-q4km-gsm8k
ALL_SETUPS=$ALL_SETUPS,llamacpp-q8-u1,llamacpp-q8-u4,llamacpp-q8-u16,llamacpp-q8-gsm8k
SETUPS=${SETUPS:-$ALL_SETUPS}
LIMIT_S=${MEASURE_LIMIT_S:-530}
PEER_ONE_ROUND_S=70 PEER_FULL_S=110  # what the peer needs at one round and at PEER_ROUNDS (both GGUFs)
SHAPE=study RUN_SIZE=(--weights random --set "gsm8k_questions=$GSM8K_QUESTIONS") CUDA_ARGS=(--cuda 90)
if [ "${SMOKE:-0}" = 1 ]; then
  SHAPE=tiny RUN_SIZE=(--smoke) CUDA_ARGS=()
  [ -n "$GSM8K_GIVEN" ] && RUN_SIZE+=(--set "gsm8k_questions=$GSM8K_QUESTIONS")
fi
mkdir -p "$WORK/carried" "$WORK/tools" "$RESULTS"
for f in .llamacpp-h200/*; do [ -f "$f" ] && cp "$f" "$WORK/carried/"; done
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH  # the device's cmake, ninja and nvcc
export LD_LIBRARY_PATH=$PREFIX/bin:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUBENCH_LLAMACPP_DIR=$PREFIX
if [ "${SMOKE:-0}" = 1 ] && python3 -c "import gpubench" 2>/dev/null; then
  echo "gpu_llamacpp: SMOKE=1 with this Python's gpubench (a development install is left as it is)"
else
  # shellcheck source=benchmarks/gpu_python_env.sh
  source "$(dirname "$0")/gpu_python_env.sh" || exit 1
fi

summary() { echo "$(date -u +%H:%M:%S) $CALL +${SECONDS}s: $*" | tee -a "$WORK/summary.txt"; }
finish() {  # $1: exit code
  summary "exit $1"
  tar czf "$OUT/llamacpp-$CALL.tgz" -C "$WORK" "results-$CALL" summary.txt \
    $( [ -f "$WORK/cuda-build.log" ] && echo cuda-build.log )
  cp "$WORK/summary.txt" "$OUT/llamacpp-summary.txt"
  exit "$1"
}

SOURCE_TREE=$WORK/src/llama.cpp
# The CUDA build as a script in /tmp, the same in both calls (a second run resumes the first's build folder), with a
# copy of the build script: bash reads a script as it goes, and the next call's working tree is another copy.
write_cuda_build() {
  cp tools/llamacpp_build.sh "$WORK/tools/"
  {
    echo "#!/usr/bin/env bash"
    printf 'export PATH=%q LD_LIBRARY_PATH=%q\n' "$PATH" "$LD_LIBRARY_PATH"
    printf '%q ' bash "$WORK/tools/llamacpp_build.sh" "${CUDA_ARGS[@]}" --source "$SOURCE_TREE" --prefix "$PREFIX" \
      --work "$WORK/cuda-build" --jobs "$CUDA_JOBS"
    printf '\necho $? >%q\n' "$WORK/cuda-build.rc"
  } >"$WORK/cuda-build.sh"
}
cuda_build_running() { [ -f "$WORK/cuda-build.pid" ] && kill -0 "$(cat "$WORK/cuda-build.pid")" 2>/dev/null; }
cuda_build_rc() { cat "$WORK/cuda-build.rc" 2>/dev/null; }
cuda_build_unfinished() { cuda_build_running && [ -z "$(cuda_build_rc)" ]; }

prepare() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$RESULTS/gpu.txt"
  fi
  nproc >"$RESULTS/nproc.txt"; df -h / /tmp "$HOME" >"$RESULTS/disk.txt" 2>&1
  write_cuda_build
  if [ ! -f "$SOURCE_TREE/GPUBENCH-SOURCE.json" ]; then
    [ -f "$WORK/carried/llama.cpp-src.tar.xz" ] || {
      summary "nothing to build from: carry .llamacpp-h200/llama.cpp-src.tar.xz (tools/llamacpp_pieces.py source)"
      return 3; }
    rm -rf "$WORK/src" && python3 - "$WORK/carried/llama.cpp-src.tar.xz" "$WORK/src" <<'PY' || return 1
import sys, tarfile  # no xz program on the machine: python3's lzma
with tarfile.open(sys.argv[1]) as tar:
    tar.extractall(sys.argv[2], filter="data")
PY
  fi
  summary "source unpacked ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"][:7])' \
    "$SOURCE_TREE/GPUBENCH-SOURCE.json"))"

  if [ "$(cuda_build_rc)" = 0 ]; then
    summary "CUDA build: done before"
  elif cuda_build_running; then
    summary "CUDA build: still running from before"
  else
    rm -f "$WORK/cuda-build.rc"
    # its own session (setsid), every descriptor away from this call's: the call ends without waiting for it
    setsid bash "$WORK/cuda-build.sh" </dev/null >"$WORK/cuda-build.log" 2>&1 &
    echo $! >"$WORK/cuda-build.pid"
    summary "CUDA build started in the background (${CUDA_ARGS[*]:-CPU stand-in}, $CUDA_JOBS jobs, pid $!)"
  fi

  bash "$WORK/tools/llamacpp_build.sh" --targets llama-quantize --source "$SOURCE_TREE" --prefix "$QUANTIZER" \
    --jobs "$QUANTIZER_JOBS" >"$RESULTS/quantizer-build.log" 2>&1 &
  local quantizer_pid=$!

  python3 benchmarks/llamacpp_ggufs.py bf16 --shape "$SHAPE" --converter "$SOURCE_TREE" \
    --source-info "$SOURCE_TREE/GPUBENCH-SOURCE.json" >"$RESULTS/gguf-bf16.txt" 2>&1
  local bf16=$?
  summary "bf16 GGUF: exit $bf16 ($(grep -m1 '^made:' "$RESULTS/gguf-bf16.txt"))"
  wait "$quantizer_pid"; local quantizer=$?
  summary "CPU llama-quantize: exit $quantizer ($(tail -n 1 "$RESULTS/quantizer-build.log"))"
  [ "$bf16" = 0 ] || { tail -n 20 "$RESULTS/gguf-bf16.txt"; return 4; }
  [ "$quantizer" = 0 ] || { tail -n 20 "$RESULTS/quantizer-build.log"; return 5; }

  # Q8_0 first, on the cores the CUDA build leaves; a K-quant costs ~6x its CPU, so it waits for the build and takes
  # every core (the H100 host, 2026-12-07: Q4_K_M took 280 s on 3 threads, and the build ended 150 s into it)
  local ordered=() quant threads quantize=0 drop
  for quant in $QUANTS; do [[ $quant == *_K* ]] || ordered+=("$quant"); done
  for quant in $QUANTS; do [[ $quant == *_K* ]] && ordered+=("$quant"); done
  : >"$RESULTS/gguf-quantize.txt"
  for quant in "${ordered[@]}"; do
    if [[ $quant == *_K* ]] && cuda_build_unfinished; then
      summary "$quant: waiting for the CUDA build, to quantize on every core"
      while cuda_build_unfinished; do sleep 5; done
    fi
    threads=$(( $(nproc) - CUDA_JOBS ))  # the cores the CUDA build leaves, all of them once it is done
    [ "$(cuda_build_rc)" = 0 ] && threads=$(nproc)
    [ "$threads" -ge 2 ] || threads=2
    drop=0; [ "$quant" = "${ordered[-1]}" ] && drop=16  # the bf16 GGUF is every quantization's input
    python3 benchmarks/llamacpp_ggufs.py quantize --shape "$SHAPE" --llamacpp-dir "$QUANTIZER" --threads "$threads" \
      --quant "$quant" --drop-bf16-below-gib "$drop" >>"$RESULTS/gguf-quantize.txt" 2>&1
    quantize=$?
    summary "$quant on $threads threads: exit $quantize ($(grep '^made:' "$RESULTS/gguf-quantize.txt" | tail -n 1))"
    [ "$quantize" = 0 ] || { tail -n 20 "$RESULTS/gguf-quantize.txt"; return 6; }
  done
  summary "CUDA build: $(cuda_build_running && echo "running: $(grep -o '^\[[0-9]*/[0-9]*\]' \
    "$WORK/cuda-build/build.log" 2>/dev/null | tail -n 1)" || echo "exit $(cuda_build_rc)")"
}

measure() {
  local waited=$SECONDS
  [ -f "$WORK/cuda-build.sh" ] || { summary "no CUDA build was started here: run prepare first"; return 2; }
  while [ -z "$(cuda_build_rc)" ]; do
    if ! cuda_build_running; then
      summary "CUDA build neither running nor done: running it again here (it resumes its folder)"
      bash "$WORK/cuda-build.sh" >>"$WORK/cuda-build.log" 2>&1
      break
    fi
    [ $(( (SECONDS - waited) % 30 )) -lt 5 ] && summary "waiting for the CUDA build: $(grep -o '^\[[0-9]*/[0-9]*\]' \
      "$WORK/cuda-build/build.log" 2>/dev/null | tail -n 1)"
    sleep 5
  done
  summary "CUDA build: exit $(cuda_build_rc) after waiting $((SECONDS - waited)) s"
  [ "$(cuda_build_rc)" = 0 ] || { tail -n 30 "$WORK/cuda-build.log"; return 3; }
  cp "$PREFIX/build-info.json" "$RESULTS/"
  { "$PREFIX/bin/llama-server" --version; "$PREFIX/bin/llama-bench" --list-devices; } >"$RESULTS/llama-cpp.txt" 2>&1
  [ "${SMOKE:-0}" = 1 ] || grep -q CUDA0 "$RESULTS/llama-cpp.txt" || {
    summary "llama.cpp finds no CUDA device"; cat "$RESULTS/llama-cpp.txt"; return 4; }
  python3 benchmarks/llamacpp_ggufs.py check --shape "$SHAPE" "${QUANT_ARGS[@]}" >"$RESULTS/gguf-check.txt" 2>&1 || {
    cat "$RESULTS/gguf-check.txt"; return 5; }

  local peer_s=$PEER_ONE_ROUND_S
  [ "$PEER_ROUNDS" = 0 ] && peer_s=0
  local run_s=$((LIMIT_S - SECONDS - peer_s - 15))
  summary "gpubench run: $SETUPS, ${RUN_SIZE[*]}, stopped after $run_s s at most"
  timeout -s INT -k 30 "$run_s" gpubench run ollama-vs-vllm --setups "$SETUPS" "${RUN_SIZE[@]}" --price "$PRICE" \
    --results-dir "$RESULTS/runs" >"$RESULTS/run.jsonl" 2>"$RESULTS/run.err"
  local run=$?
  summary "gpubench run: exit $run ($(grep -c '"kind": *"result"' "$RESULTS/run.jsonl") results)"
  local table
  table=$(ls -t "$RESULTS"/runs/*/summary.md 2>/dev/null | head -n 1)
  [ -n "$table" ] && cp "$table" "$OUT/llamacpp-run-summary.md"

  local left=$((LIMIT_S - SECONDS - 10)) rounds=$PEER_ROUNDS
  [ "$left" -lt "$PEER_FULL_S" ] && rounds=1
  if [ "$PEER_ROUNDS" = 0 ]; then
    summary "peer: PEER_ROUNDS=0"
  elif [ "$left" -lt "$PEER_ONE_ROUND_S" ]; then
    summary "peer: skipped, $left s left"
  else
    summary "peer: $rounds round(s) of $PEER_REPS, $left s at most"
    timeout -s INT -k 10 "$left" python3 benchmarks/llamacpp_peer.py --shape "$SHAPE" "${QUANT_ARGS[@]}" \
      --rounds "$rounds" --reps "$PEER_REPS" --out "$RESULTS/peer" >"$RESULTS/peer.txt" 2>"$RESULTS/peer.err"
    summary "peer: exit $?"
    cp "$RESULTS/peer.txt" "$OUT/llamacpp-peer.txt"
  fi
  return "$run"
}

"$CALL"
finish $?
