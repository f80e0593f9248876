#!/usr/bin/env bash
# Issue 33's H200 hold: the peer table against `vllm bench serve` at 128, 256, 512 and 1,024 users on one vLLM
# (--max-num-seqs 1024), and an open loop at 200 requests/s with short outputs, in five calls made back to back.
# benchmarks/serving_peer_check.sh does the work (each client's CPU, memory and the server's running and waiting
# gauges through its timed load, the server's API process and engine core CPU over each client's run; each call's
# folder comes back as one .tgz with table.txt). The server starts once, in call 2, in a session of its own
# (SERVER_KEEP_DIR), and calls 3-5 reuse it: a start is 100-140 s, which five starts made the old eight-call plan
# (~49 device-minutes) too long for a 30-minute budget.
#
#   CALL=1  carry .vllm-h200/c1 and .whl: piece 1 copied to /tmp; the pacer at 200/s on the known-timing server,
#           one and two client processes, PACER_REQUESTS each (12,000: ~150 s; 6,000: ~90 s)
#   CALL=2  carry .vllm-h200/c2: unpack; the server started and kept; 128 and 256 users, 1,280 requests a client,
#           vLLM's client first (~420 s)
#   CALL=3  512 users: gpubench 10,000 timed requests, vLLM's client 7,000 (VLLM_CLIENT_REQUESTS), vLLM's first
#           (~500 s); CHUNKS_REQUESTS=N then runs N more with gpubench counting chunks (no return_token_ids, as vLLM's
#           client asks), a seed of round 2, into $OUT/chunks: what asking for the counts costs the API server
#   CALL=4  1,024 users: the same, gpubench first (~490 s)
#   CALL=5  the open loop: 200 requests/s, 12,000 requests of 16 tokens out, each client; the server stopped (~170 s)
#   CALL=6  (if time is left) 1,024 users, gpubench alone, 2,500 requests counting a chunk's tokens each way (chunks,
#           return_token_ids, continuous usage): does asking vLLM's API server for the counts cost it throughput at
#           its limit? Run it before CALL=5 (which stops the server), or alone (it starts one: ~520 s).
#
# One warm-up request a user (WARMUP_X=1). vLLM's client runs at least 1/1.5 of gpubench's requests: every answer is
# 256 tokens, so a closed loop moves in waves of `users` requests that start and end together, and runs of unlike
# lengths measure unlike mixes of first wave, steady waves and drain (serving_peer_table.py marks them neq; the
# 2026-12-04c hold's 2,000 and 1,000 against 10,000 were). About 1,650-1,700 device-seconds with the machine's
# start, at the 2026-12-04c hold's rates (~37 requests/s at 512 users, ~42 at 1,024), CHUNKS_REQUESTS=1500 included,
# back to back: the machine goes back after ~30 s idle, and with it the kept server and /tmp's vLLM (that hold lost
# 580 s so). A call that finds no kept server starts one and says so (~120 s more).
# Pool two calls' folders: python3 benchmarks/serving_peer_table.py peer-c3 peer-c4 (after untarring).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
export SERVER_EXTRA="--max-num-seqs 1024 ${SERVER_EXTRA:-}"
export SERVER_KEEP_DIR=${SERVER_KEEP_DIR:-/tmp/gpubench-peer-server}
case "${CALL:?set CALL=1..6}" in
  1) source "$HERE/gpu_vllm_env.sh"; source "$HERE/gpu_python_env.sh" || exit 1
     { echo "cores $(nproc); somaxconn $(cat /proc/sys/net/core/somaxconn); load $(cut -d' ' -f1-3 /proc/loadavg)"
       for processes in 1 2; do
         echo "== rate 200/s, $processes client process(es), ${PACER_REQUESTS:-12000} requests"
         timeout 150 python3 "$HERE/loadgen_pacer.py" --rate 200 --requests "${PACER_REQUESTS:-12000}" \
           --processes "$processes"
       done
     } 2>&1 | tee "$OUT/pacer-200.txt"
     exit 0 ;;
  2) LEVELS="128:1280 256:1280"; CLIENTS="vllm gpubench"; LIMIT_S=470 ;;
  3) LEVELS="512:10000"; VLLM_CLIENT_REQUESTS=${VLLM_CLIENT_REQUESTS:-7000}; CLIENTS="vllm gpubench"; LIMIT_S=200 ;;
  4) LEVELS="1024:10000"; VLLM_CLIENT_REQUESTS=${VLLM_CLIENT_REQUESTS:-7000}; CLIENTS="gpubench vllm"; LIMIT_S=200 ;;
  5) LEVELS=""; CLIENTS="vllm gpubench"; LIMIT_S=200; export SERVER_STOP=1
     export OPEN_RATE=200 OPEN_REQUESTS=12000 OPEN_OUTLEN=16 ;;
  6) LEVELS="1024:2500"; CLIENTS="gpubench+chunks gpubench+token-ids gpubench+usage"; LIMIT_S=200 ;;
  *) echo "CALL must be 1 to 6"; exit 2 ;;
esac
export LEVELS CLIENTS LIMIT_S ROUNDS=1 FIRST_ROUND=1 VLLM_CLIENT_REQUESTS=${VLLM_CLIENT_REQUESTS:-}
export WARMUP_X=${WARMUP_X:-1}
source "$HERE/gpu_vllm_env.sh" && bash "$HERE/serving_peer_check.sh"
status=$?
if [ "$CALL" = 3 ] && [ "${CHUNKS_REQUESTS:-0}" -gt 0 ]; then  # the same level, counting chunks as vLLM's client does
  mkdir -p "$OUT/chunks"
  OUT=$OUT/chunks FIRST_ROUND=2 LEVELS="512:$CHUNKS_REQUESTS" CLIENTS="gpubench+chunks" \
    bash "$HERE/serving_peer_check.sh"
fi
exit $status
