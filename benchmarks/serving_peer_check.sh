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
# Through every client's run server_gauges_log.py logs the server's gauges (running, waiting) and its own counters
# (tokens generated and prompted, engine steps, preemptions, prefix cache hits): the table's "server's own count"
# reads them over each client's timed window, the server's word on what each load made it do, with the GPU's mean SM
# clock, power and temperature over the same seconds (nvidia-smi, where there is one).
# Results: $OUT/peer-<time>.tgz (each client's output, server.log, table.txt) with the table and summary beside it;
# $OUT/peer-partial.tgz holds every run finished so far while it goes (a call cut by its limit still brings those
# back). TAR=0 leaves the folder as $OUT/peer instead. On a CPU (the proof that it runs):
#   OUT=/tmp/peer PYTHON=.venv-vllm/bin/python GPUBENCH="python -m gpubench" SHAPE=tiny \
#     LEVELS="1:4 4:8" ROUNDS=2 IN=64 OUTLEN=16 SERVER_EXTRA="--enforce-eager --max-model-len 1024" \
#     VLLM_CPU_KVCACHE_SPACE=1 bash benchmarks/serving_peer_check.sh
# Time on the H200 (estimated from the reference run's TPOTs: 4.7 ms at 1 user, ~5 at 16, ~8 at 64; vllm bench serve
# starts in ~10-15 s): server 100-140 s, then a round of the three levels ~160 s (1 user: 18 requests of 1.2 s a client;
# 16 and 64 users: ~20 s a client), 2 rounds ~330 s: ~450-490 s in all. LIMIT_S (470) stops starting levels so the one
# in flight and the shutdown still end inside the call's 600 s; the table shows what finished.
# Knobs: LEVELS ("users:requests ..."; default 1:16 16:160 64:320, sized to fit one call), ROUNDS (2), IN, OUTLEN,
# CLIENTS ("vllm gpubench", in that order; one of them alone when a level's two runs do not fit one call; gpubench+WAY
# runs gpubench with --count-tokens WAY into its own file, e.g. "gpubench+chunks gpubench+token-ids gpubench+usage";
# vllm+gpubench-prompts runs vLLM's client on the prompts gpubench builds for that seed (a ShareGPT file): with both
# clients sending the same prompts, a gap left is the clients', and one that goes is the prompts'),
# WARMUP_X (warm-up requests per user, 2), OPEN_RATE / OPEN_REQUESTS / OPEN_OUTLEN (after the levels, an open loop at
# OPEN_RATE requests/s of OPEN_REQUESTS requests of OPEN_OUTLEN tokens from each client; unset: none),
# SERVER_KEEP_DIR (a folder in /tmp: the server is started there in its own session, setsid, and left running when
# the call ends, so the next call made while the machine is warm reuses it instead of starting another; SERVER_STOP=1
# stops it at the end), VLLM_CLIENT_REQUESTS (vLLM's client's requests at every level, where it needs fewer than
# gpubench's count to give its figure), FIRST_ROUND (1; a later call that adds rounds on a new server starts past the
# last, so no seed repeats and the table pools both folders' files), PYTHON (the python that imports vllm and
# gpubench), GPUBENCH (how to run gpubench), SHAPE (qwen7b | tiny),
# SERVER_EXTRA (more server flags, after the study's), LOADGEN_EXTRA (more `gpubench loadgen` flags, e.g.
# --prompt-ids to send token ids where vLLM's client sends text), PORT, LIMIT_S (stop starting levels after this
# many seconds). Both clients send each prompt as text of exactly IN tokens (vLLM's random data set and gpubench's
# prompts with --tokenizer), which the server tokenizes.
set -u
OUT=${OUT:?set OUT to a folder}; mkdir -p "$OUT"
if [ "${TAR:-1}" = 1 ]; then  # at most 8 files come back from a device call: the folder stays outside $OUT
  D=$(mktemp -d /tmp/gpubench-peer-XXXXXX)/peer
else
  D=$OUT/peer
fi
mkdir -p "$D"
snapshot() {  # every finished run in one archive, replaced after each
  [ "${TAR:-1}" = 1 ] && tar czf "$OUT/peer-partial.tgz" -C "$(dirname "$D")" --exclude=peer/model peer
}
if [ -n "${VLLM_READY+set}" ] && [ "$VLLM_READY" != 1 ]; then  # gpu_vllm_env.sh ran, and the pieces are incomplete
  echo "vLLM is not unpacked yet (VLLM_READY=$VLLM_READY): carry the remaining .vllm-h200 pieces first"; exit 3
fi
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}; GPUBENCH=${GPUBENCH:-gpubench}
LEVELS=${LEVELS-"1:16 16:160 64:320"}; ROUNDS=${ROUNDS:-2}; FIRST_ROUND=${FIRST_ROUND:-1}
CLIENTS=${CLIENTS:-"vllm gpubench"}; WARMUP_X=${WARMUP_X:-2}
OPEN_RATE=${OPEN_RATE:-}; OPEN_REQUESTS=${OPEN_REQUESTS:-12000}; OPEN_OUTLEN=${OPEN_OUTLEN:-16}
IN=${IN:-512}; OUTLEN=${OUTLEN:-256}
SHAPE=${SHAPE:-qwen7b}; PORT=${PORT:-8031}; LIMIT_S=${LIMIT_S:-470}; NAME=Qwen/Qwen2.5-7B-Instruct
M=$D/model; URL=http://127.0.0.1:$PORT
KEEP=${SERVER_KEEP_DIR:-}
[ -n "$KEEP" ] && { mkdir -p "$KEEP"; M=$KEEP/model; }
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
t0=$SECONDS

answers() { "$PY" -c "import urllib.request; urllib.request.urlopen('$URL/v1/models', timeout=2)" 2>/dev/null; }
if [ -n "$KEEP" ] && [ -f "$KEEP/server.pid" ] && kill -0 "$(cat "$KEEP/server.pid")" 2>/dev/null && answers; then
  SERVER=$(cat "$KEEP/server.pid")
  echo "server: reused, pid $SERVER, started by an earlier call: $(cat "$KEEP/server.args")" | tee -a "$D/summary.txt"
else
SERVER_ARGS=$("$PY" - "$M" "$NAME" "$SHAPE" <<'EOF'
import sys
from gpubench.servers.tiny_model import QWEN25_7B, TINY, write_qwen2
from gpubench.servers.vllm import VllmFlags
folder, name, shape = sys.argv[1:]
write_qwen2(folder, QWEN25_7B if shape == "qwen7b" else TINY, weights=False)
print(" ".join(VllmFlags(model=folder, served_model_name=name, load_format="dummy").args()))
EOF
) || { echo "could not write the model folder or the flags"; exit 3; }
echo "server: $SERVER_ARGS ${SERVER_EXTRA:-}" | tee -a "$D/summary.txt"
log=$D/server.log launch=()
if [ -n "$KEEP" ]; then  # its own session: it outlives this call, and is stopped as one process group
  log=$KEEP/server.log launch=(setsid)
  echo "$SERVER_ARGS ${SERVER_EXTRA:-}" >"$KEEP/server.args"
fi
# shellcheck disable=SC2086 # the flags are words
"${launch[@]}" "$PY" -m vllm.entrypoints.openai.api_server $SERVER_ARGS ${SERVER_EXTRA:-} --host 127.0.0.1 \
  --port "$PORT" </dev/null >"$log" 2>&1 &
SERVER=$!
[ -n "$KEEP" ] && echo $SERVER >"$KEEP/server.pid"
fi
echo "machine: $(nproc) cores, net.core.somaxconn $(cat /proc/sys/net/core/somaxconn 2>/dev/null)," \
  "tcp_max_syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog 2>/dev/null); clients: $CLIENTS" \
  | tee -a "$D/summary.txt"
ready=0
for _ in $(seq 1 900); do
  answers && { ready=1; break; }
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
vllm_bench() {  # users (0: none, an open loop's flags follow) requests seed file [more flags]
  local closed=() data=(--dataset-name random --random-input-len "$IN" --random-output-len "${OUTLEN_NOW:-$OUTLEN}"
    --random-range-ratio 0)
  [ "$1" -gt 0 ] && closed=(--max-concurrency "$1" --num-warmups $((WARMUP_X * $1)))
  # gpubench's prompts for a seed, as a ShareGPT file: read without pandas, which the custom data set needs
  if [ -n "${PROMPTS_FROM:-}" ]; then
    data=(--dataset-name sharegpt --dataset-path "$PROMPTS_FROM" --sharegpt-output-len "${OUTLEN_NOW:-$OUTLEN}")
  fi
  "$PY" "$HERE/client_cpu.py" "$D/$4.cpu.json" -- "${BENCH[@]}" --backend vllm \
    --base-url "$URL" --endpoint /v1/completions --model "$NAME" --tokenizer "$M" "${data[@]}" --num-prompts "$2" \
    "${closed[@]}" --ignore-eos --temperature 0 --seed "$3" \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --disable-tqdm \
    --save-result --save-detailed --result-dir "$D" --result-filename "$4.json" "${@:5}" > "$D/$4.log" 2>&1
}
gpubench_prompts() {  # requests seed file: the timed prompts `gpubench loadgen --seed seed` sends, as ShareGPT
  "$PY" - "$M" "$IN" "$1" "$2" "$3" <<'PY'
import json, sys
from gpubench.loadgen import prompts
from gpubench.loadgen.spec import LoadSpec
tokenizer, tokens, requests, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
spec = LoadSpec(base_url="http://unused/v1", model="m", requests=requests, input_tokens=tokens, tokenizer=tokenizer,
                seed=seed)
with open(out, "w") as f:  # the answer's text is not used: --sharegpt-output-len sets every length
    json.dump([{"conversations": [{"from": "human", "value": p.as_text()}, {"from": "gpt", "value": "-"}]}
               for p in prompts.build(spec, requests)], f)
PY
}
gauges_log_start() {  # file: the server's gauges and counters through one client's run (server_gauges_log.py),
  # and the GPU's SM clock, power and temperature every 0.5 s (UTC stamps): a step slower with the same batch shows
  # there if the GPU ran at a lower clock
  "$PY" "$HERE/server_gauges_log.py" "$URL" "$D/$1.gauges.json" & LOGGER=$!
  GPULOG=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    TZ=UTC nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu \
      --format=csv,noheader,nounits -lms 500 >"$D/$1.gpu.csv" 2>/dev/null & GPULOG=$!
  fi
}
gauges_log_stop() {
  kill -TERM "$LOGGER" $GPULOG 2>/dev/null; wait "$LOGGER" $GPULOG 2>/dev/null
}
TICK=$(getconf CLK_TCK)
ticks_of() {  # pid: its utime + stime (all its threads), 0 once it is gone
  local stat fields; stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
  read -ra fields <<<"${stat##*) }"; echo $((fields[11] + fields[12]))
}
server_ticks() {  # the API process (the server's own) and, apart, its children: the engine core and its helpers
  local child engine=0
  for child in $(ps -o pid= --ppid "$SERVER" 2>/dev/null); do engine=$((engine + $(ticks_of "$child"))); done
  echo "$(ticks_of "$SERVER") $engine"
}
server_cpu_start() { read -r API0 ENGINE0 <<<"$(server_ticks)"; WALL0=$(date +%s.%N); }
server_cpu_end() {  # file tokens-streamed: the server's CPU over one client run (its warm-up included)
  local api engine; read -r api engine <<<"$(server_ticks)"
  awk -v a=$((api - API0)) -v e=$((engine - ENGINE0)) -v tick="$TICK" -v w0="$WALL0" -v w1="$(date +%s.%N)" \
    -v tokens="$2" -v json="$D/$1.server.json" 'BEGIN {
      printf "{\"api_cpu_s\": %.2f, \"engine_cpu_s\": %.2f, \"wall_s\": %.2f, \"tokens\": %d}\n",
             a / tick, e / tick, w1 - w0, tokens > json
      printf "  server: API process %.1f CPU-s (%.0f%% of a core, %.1f ms per 1k tokens streamed), engine core %.0f%%\n",
             a / tick, 100 * a / tick / (w1 - w0), 1e6 * a / tick / tokens, 100 * e / tick / (w1 - w0) }' \
    | tee -a "$D/summary.txt"
}
gpubench_loadgen() {  # users (0: none, an open loop's flags follow) requests seed file [more flags]
  local closed=(); [ "$1" -gt 0 ] && closed=(--users "$1" --warmup $((WARMUP_X * $1)))
  # shellcheck disable=SC2086 # GPUBENCH may be several words
  "$PY" "$HERE/client_cpu.py" "$D/$4.cpu.json" -- $GPUBENCH loadgen --base-url "$URL/v1" --model "$NAME" \
    "${closed[@]}" --requests "$2" --input-tokens "$IN" --output-tokens "${OUTLEN_NOW:-$OUTLEN}" --ignore-eos \
    --temperature 0 --tokenizer "$M" --seed "$3" --results-dir "$D/loadgen-runs" \
    --json ${LOADGEN_EXTRA:-} "${@:5}" > "$D/$4.jsonl" 2> "$D/$4.err"
}

if [ $ready = 1 ]; then
  for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
    for level in $LEVELS; do
      users=${level%%:*}; requests=${level##*:}
      if [ $((SECONDS - t0)) -gt "$LIMIT_S" ]; then
        echo "stopped at u$users round $round: past LIMIT_S=$LIMIT_S s" | tee -a "$D/summary.txt"; break 2
      fi
      k=0
      for client in $CLIENTS; do  # A B in the order given; a fresh seed for each (no prompt reaches the cache twice)
        k=$((k + 1)); t=$SECONDS; seed=$((round * 1000 + users * 10 + k))
        sent=$(( $([ $client = vllm ] && echo "${VLLM_CLIENT_REQUESTS:-$requests}" || echo "$requests") + WARMUP_X * users ))
        server_cpu_start; gauges_log_start "$client-u$users-r$round"
        if [ $client = vllm ]; then
          vllm_bench "$users" "${VLLM_CLIENT_REQUESTS:-$requests}" $seed "vllm-u$users-r$round"; code=$?
        elif [ $client = vllm+gpubench-prompts ]; then  # vLLM's client sending what gpubench would at this seed
          gpubench_prompts "$requests" $seed "$D/prompts-$seed.json" \
            && PROMPTS_FROM=$D/prompts-$seed.json vllm_bench "$users" "$requests" $seed "$client-u$users-r$round"
          code=$?; rm -f "$D/prompts-$seed.json"
        elif [ $client = gpubench ]; then
          gpubench_loadgen "$users" "$requests" $seed "gpubench-u$users-r$round"; code=$?
        else  # gpubench+WAY: gpubench counting a chunk's tokens WAY's way (its own file; not in the peer table)
          gpubench_loadgen "$users" "$requests" $seed "$client-u$users-r$round" --count-tokens "${client#gpubench+}"
          code=$?
          "$PY" - "$D/$client-u$users-r$round.jsonl" <<'PY' | tee -a "$D/summary.txt"
import json, sys
for r in map(json.loads, open(sys.argv[1])):
    if r.get("kind") == "result":
        m = {k: v["value"] for k, v in r["metrics"].items()}
        print(f"  {sys.argv[1].rsplit('/', 1)[-1]}: {r['status']}, {m.get('output_tokens_per_s', 0):,.0f} tok/s, TTFT p50"
              f" {m.get('ttft_ms_p50', 0):,.0f} ms, TPOT p50 {m.get('tpot_ms_p50', 0):.2f} ms, server running"
              f" {m.get('server_running_mean', 0):.0f}, counted by {r['info'].get('token_counting', {}).get('way')}")
PY
        fi
        gauges_log_stop
        echo "$client u$users r$round (seed $seed): exit $code after $((SECONDS - t)) s" | tee -a "$D/summary.txt"
        server_cpu_end "$client-u$users-r$round" $((sent * OUTLEN))
        snapshot
      done
    done
  done
  if [ -n "$OPEN_RATE" ]; then  # the open loop: Poisson arrivals at OPEN_RATE/s, short answers, no in-flight cap
    OUTLEN_NOW=$OPEN_OUTLEN
    for client in $CLIENTS; do
      t=$SECONDS; seed=$((9000 + $([ $client = vllm ] && echo 1 || echo 2))); server_cpu_start
      gauges_log_start "$client-r$OPEN_RATE-r1"
      if [ $client = vllm ]; then
        vllm_bench 0 "$OPEN_REQUESTS" $seed "vllm-r$OPEN_RATE-r1" --request-rate "$OPEN_RATE" --num-warmups 200
      else
        gpubench_loadgen 0 "$OPEN_REQUESTS" $seed "gpubench-r$OPEN_RATE-r1" --rate "$OPEN_RATE" --warmup 200
      fi
      code=$?; gauges_log_stop
      echo "$client open loop $OPEN_RATE/s x $OPEN_REQUESTS: exit $code after $((SECONDS - t)) s" | tee -a "$D/summary.txt"
      server_cpu_end "$client-r$OPEN_RATE-r1" $(((OPEN_REQUESTS + 200) * OPEN_OUTLEN))
      snapshot
    done
    OUTLEN_NOW=
  fi
fi

if [ -n "$KEEP" ] && [ "${SERVER_STOP:-0}" != 1 ]; then
  echo "server kept running for the next call (pid $SERVER, $KEEP)" | tee -a "$D/summary.txt"
  cp "$KEEP/server.log" "$D/server.log"
elif [ -n "$KEEP" ]; then
  kill -INT -- "-$SERVER" 2>/dev/null; for _ in $(seq 1 40); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
  cp "$KEEP/server.log" "$D/server.log"; rm -rf "$KEEP"
  echo "server stopped (its process group)" | tee -a "$D/summary.txt"
else
  tree() { local p; for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$p"; echo "$p"; done; }
  KIDS=$(tree $SERVER)  # the engine core and its helpers, found by parent id before the server goes
  kill -INT $SERVER 2>/dev/null; for _ in $(seq 1 40); do kill -0 $SERVER 2>/dev/null || break; sleep 0.5; done
  for p in $SERVER $KIDS; do kill -KILL "$p" 2>/dev/null; done; wait $SERVER 2>/dev/null
  rm -rf "$M"
fi
echo "total $((SECONDS - t0)) s" | tee -a "$D/summary.txt"
"$PY" "$HERE/serving_peer_table.py" "$D" | tee "$D/table.txt"
if [ "${TAR:-1}" = 1 ]; then  # at most 8 files come back from a device call: the folder as one archive
  cp "$D/table.txt" "$OUT/table-$(date +%H%M%S).txt"; cp "$D/summary.txt" "$OUT/summary-$(date +%H%M%S).txt"
  tar czf "$OUT/peer-$(date +%H%M%S).tgz" -C "$(dirname "$D")" --exclude=peer/model peer \
    && rm -rf "$(dirname "$D")" "$OUT/peer-partial.tgz"
fi
