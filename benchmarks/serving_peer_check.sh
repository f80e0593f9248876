#!/usr/bin/env bash
# The peer check (issue 23): one vLLM server, then vLLM's own client (`vllm bench serve`) and `gpubench loadgen`
# interleaved A B A B at 1, 16 and 64 users on the same load, printed side by side by serving_peer_table.py.
#
# Server: the vllm-serving study's flags (gpubench's own VllmFlags: bf16, --max-model-len 4096,
# --gpu-memory-utilization 0.90), random weights at Qwen2.5-7B's shape (write_qwen2(..., weights=False),
# --load-format dummy). Load: random prompts of 512 tokens, exactly 256 out (ignore_eos), temperature 0,
# 2 x users warm-ups, a fresh seed per client, level and round (no prompt is sent twice).
#
# On the H200 (one 10-minute call; the server starts in ~100-140 s):
#   source benchmarks/gpu_vllm_env.sh && bash benchmarks/serving_peer_check.sh
# Results under $OUT/peer: each client's output, server.log, table.txt. On a CPU (the proof that it runs):
#   OUT=/tmp/peer PYTHON=.venv-vllm/bin/python GPUBENCH="python -m gpubench" SHAPE=tiny \
#     LEVELS="1:4 4:8" ROUNDS=2 IN=64 OUTLEN=16 SERVER_EXTRA="--enforce-eager --max-model-len 1024" \
#     VLLM_CPU_KVCACHE_SPACE=1 bash benchmarks/serving_peer_check.sh
# Time on the H200 (estimated from the reference run's TPOTs: 4.7 ms at 1 user, ~5 at 16, ~8 at 64; vllm bench serve
# starts in ~10-15 s): server 100-140 s, then a round of the three levels ~160 s (1 user: 18 requests of 1.2 s a client;
# 16 and 64 users: ~20 s a client), 2 rounds ~330 s: ~450-490 s in all. LIMIT_S (470) stops starting levels so the one
# in flight and the shutdown still end inside the call's 600 s; the table shows what finished.
# Knobs: LEVELS ("users:requests ..."; default 1:16 16:160 64:320, sized to fit one call), ROUNDS (2), IN, OUTLEN,
# FIRST_ROUND (1; a later call that adds rounds on a new server starts past the last, so no seed repeats and the
# table pools both folders' files), PYTHON (the python that imports vllm and gpubench), GPUBENCH (how to run
# gpubench), SHAPE (qwen7b | tiny),
# SERVER_EXTRA (more server flags, after the study's), LOADGEN_EXTRA (more `gpubench loadgen` flags, e.g.
# --prompt-ids to send token ids where vLLM's client sends text), PORT, LIMIT_S (stop starting levels after this
# many seconds). Both clients send each prompt as text of exactly IN tokens (vLLM's random data set and gpubench's
# prompts with --tokenizer), which the server tokenizes.
set -u
OUT=${OUT:?set OUT to a folder}; D=$OUT/peer; mkdir -p "$D"
if [ -n "${VLLM_READY+set}" ] && [ "$VLLM_READY" != 1 ]; then  # gpu_vllm_env.sh ran, and the pieces are incomplete
  echo "vLLM is not unpacked yet (VLLM_READY=$VLLM_READY): carry the remaining .vllm-h200 pieces first"; exit 3
fi
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}; GPUBENCH=${GPUBENCH:-gpubench}
LEVELS=${LEVELS:-"1:16 16:160 64:320"}; ROUNDS=${ROUNDS:-2}; FIRST_ROUND=${FIRST_ROUND:-1}
IN=${IN:-512}; OUTLEN=${OUTLEN:-256}
SHAPE=${SHAPE:-qwen7b}; PORT=${PORT:-8031}; LIMIT_S=${LIMIT_S:-470}; NAME=Qwen/Qwen2.5-7B-Instruct
M=$D/model; URL=http://127.0.0.1:$PORT
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
t0=$SECONDS

SERVER_ARGS=$("$PY" - "$M" "$NAME" "$SHAPE" <<'EOF'
import sys
from gpubench.servers.tiny_model import QWEN25_7B, TINY, write_qwen2
from gpubench.servers.vllm import VllmFlags
folder, name, shape = sys.argv[1:]
write_qwen2(folder, QWEN25_7B if shape == "qwen7b" else TINY, weights=False)
print(" ".join(VllmFlags(model=folder, served_model_name=name, load_format="dummy").args()))
EOF
) || { echo "could not write the model folder or the flags"; exit 3; }
echo "server: $SERVER_ARGS ${SERVER_EXTRA:-}" | tee "$D/summary.txt"
# shellcheck disable=SC2086 # the flags are words
"$PY" -m vllm.entrypoints.openai.api_server $SERVER_ARGS ${SERVER_EXTRA:-} --host 127.0.0.1 --port "$PORT" \
  > "$D/server.log" 2>&1 &
SERVER=$!
ready=0
for _ in $(seq 1 900); do
  "$PY" -c "import urllib.request; urllib.request.urlopen('$URL/v1/models', timeout=2)" 2>/dev/null && { ready=1; break; }
  kill -0 $SERVER 2>/dev/null || break
  sleep 0.5
done
echo "server ready=$ready after $((SECONDS - t0)) s" | tee -a "$D/summary.txt"

# `vllm bench serve`; the CPU build (distribution vllm-cpu) has no "vllm" metadata, which its CLI's --version needs,
# so there the same benchmark is called directly (vllm_bench_serve.py).
if "$PY" -c "import importlib.metadata as m; m.version('vllm')" 2>/dev/null; then
  BENCH=("$PY" -m vllm.entrypoints.cli.main bench serve)
else
  BENCH=("$PY" "$HERE/vllm_bench_serve.py")
  echo "vllm bench serve: no vllm metadata (a CPU build?), calling vllm.benchmarks.serve.main" | tee -a "$D/summary.txt"
fi
vllm_bench() {  # users requests seed file
  "$PY" "$HERE/client_cpu.py" "$D/$4.cpu.json" -- "${BENCH[@]}" --backend vllm \
    --base-url "$URL" --endpoint /v1/completions --model "$NAME" --tokenizer "$M" --dataset-name random \
    --random-input-len "$IN" --random-output-len "$OUTLEN" --random-range-ratio 0 --num-prompts "$2" \
    --max-concurrency "$1" --ignore-eos --temperature 0 --seed "$3" --num-warmups $((2 * $1)) \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --disable-tqdm \
    --save-result --result-dir "$D" --result-filename "$4.json" > "$D/$4.log" 2>&1
}
gpubench_loadgen() {  # users requests seed file
  # shellcheck disable=SC2086 # GPUBENCH may be several words
  $GPUBENCH loadgen --base-url "$URL/v1" --model "$NAME" --users "$1" --requests "$2" --input-tokens "$IN" \
    --output-tokens "$OUTLEN" --ignore-eos --temperature 0 --tokenizer "$M" --seed "$3" \
    --results-dir "$D/loadgen-runs" --json ${LOADGEN_EXTRA:-} > "$D/$4.jsonl" 2> "$D/$4.err"
}

if [ $ready = 1 ]; then
  for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
    for level in $LEVELS; do
      users=${level%%:*}; requests=${level##*:}
      if [ $((SECONDS - t0)) -gt "$LIMIT_S" ]; then
        echo "stopped at u$users round $round: past LIMIT_S=$LIMIT_S s" | tee -a "$D/summary.txt"; break 2
      fi
      for client in vllm gpubench; do  # A B: vLLM's client first in every round
        t=$SECONDS; seed=$((round * 1000 + users * 10 + $([ $client = vllm ] && echo 1 || echo 2)))
        if [ $client = vllm ]; then vllm_bench "$users" "$requests" $seed "vllm-u$users-r$round"
        else gpubench_loadgen "$users" "$requests" $seed "gpubench-u$users-r$round"; fi
        echo "$client u$users r$round (seed $seed): exit $? after $((SECONDS - t)) s" | tee -a "$D/summary.txt"
      done
    done
  done
fi

tree() { local p; for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$p"; echo "$p"; done; }
KIDS=$(tree $SERVER)  # the engine core and its helpers, found by parent id before the server goes
kill -INT $SERVER 2>/dev/null; for _ in $(seq 1 40); do kill -0 $SERVER 2>/dev/null || break; sleep 0.5; done
for p in $SERVER $KIDS; do kill -KILL "$p" 2>/dev/null; done; wait $SERVER 2>/dev/null
rm -rf "$M"
echo "total $((SECONDS - t0)) s" | tee -a "$D/summary.txt"
"$PY" "$HERE/serving_peer_table.py" "$D" | tee "$D/table.txt"
