#!/usr/bin/env bash
# Issue 33's H200 hold: the peer table against `vllm bench serve` at 128, 256, 512 and 1,024 users on one vLLM
# (--max-num-seqs 1024), and an open loop at 200 requests/s with short outputs. One call per CALL, each under ~9
# minutes (benchmarks/serving_peer_check.sh does the work: a fresh server per call, each client's CPU, memory and the
# server's running and waiting gauges through its timed load; the folder comes back as one .tgz with table.txt).
#
#   CALL=1  carry .vllm-h200/c1 and .whl: piece 1 copied to /tmp; the pacer at 200/s on the known-timing server, 1
#           and 2 client processes (~150 s)
#   CALL=2  carry .vllm-h200/c2: unpack, then 128 and 256 users, 2,560 requests a client each, A B (~500 s)
#   CALL=3  512 users, 5,000 requests a client, vLLM's client first (~480 s)
#   CALL=4  512 users, 5,000 more a client on a new server, gpubench first (round 2; ~480 s)
#   CALL=5  1,024 users, 5,000 a client, vLLM's first (~500 s)
#   CALL=6  1,024 users, 5,000 more a client, gpubench first (round 2; ~500 s)
#   CALL=7  the open loop: 200 requests/s, 12,000 requests of 16 tokens out, each client (~330 s)
#   CALL=8  (if time is left) 1,024 users, gpubench alone, 2,500 requests counting a chunk's tokens each way (chunks,
#           return_token_ids, continuous usage): does asking vLLM's API server for the counts cost it throughput at
#           its limit? (on the CPU vLLM the three cost its API server the same within noise; ~520 s)
#
# Calls 3+4 and 5+6 give each client 10,000 timed requests at 512 and at 1,024 users, in two rounds on two servers,
# each round with both clients on one server in one call (the peer's figure is the check: same machine, same call).
# Pool them: python3 benchmarks/serving_peer_table.py peer-c3 peer-c4 (after untarring). A run of 10,000 in one go
# does not fit a call next to its peer (~270 s a client at ~37 requests/s, plus the server's start); for that, set
# LEVELS=512:10000 CLIENTS=gpubench (then CLIENTS=vllm) in two calls. Expected seconds assume the 2026-12-02 hold's
# rates (~9,300 output tokens/s at 512 users, ~10,100 at 1,024, 256 out) and a server ready in 100-140 s.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
export SERVER_EXTRA="--max-num-seqs 1024 ${SERVER_EXTRA:-}"
case "${CALL:?set CALL=1..8}" in
  1) source "$HERE/gpu_vllm_env.sh"; source "$HERE/gpu_python_env.sh" || exit 1
     { echo "cores $(nproc); somaxconn $(cat /proc/sys/net/core/somaxconn); load $(cut -d' ' -f1-3 /proc/loadavg)"
       for processes in 1 2; do
         echo "== rate 200/s, $processes client process(es), 12000 requests"
         timeout 150 python3 "$HERE/loadgen_pacer.py" --rate 200 --requests 12000 --processes "$processes"
       done; } 2>&1 | tee "$OUT/pacer-200.txt"
     exit 0 ;;
  2) LEVELS="128:2560 256:2560"; CLIENTS="vllm gpubench"; ROUNDS=1; FIRST_ROUND=1; LIMIT_S=470 ;;
  3) LEVELS="512:5000"; CLIENTS="vllm gpubench"; ROUNDS=1; FIRST_ROUND=1; LIMIT_S=200 ;;
  4) LEVELS="512:5000"; CLIENTS="gpubench vllm"; ROUNDS=1; FIRST_ROUND=2; LIMIT_S=200 ;;
  5) LEVELS="1024:5000"; CLIENTS="vllm gpubench"; ROUNDS=1; FIRST_ROUND=1; LIMIT_S=200 ;;
  6) LEVELS="1024:5000"; CLIENTS="gpubench vllm"; ROUNDS=1; FIRST_ROUND=2; LIMIT_S=200 ;;
  7) LEVELS=""; CLIENTS="vllm gpubench"; ROUNDS=1; FIRST_ROUND=1; LIMIT_S=200
     export OPEN_RATE=200 OPEN_REQUESTS=12000 OPEN_OUTLEN=16 ;;
  8) LEVELS="1024:2500"; CLIENTS="gpubench+chunks gpubench+token-ids gpubench+usage"; ROUNDS=1; FIRST_ROUND=1
     LIMIT_S=200 ;;
  *) echo "CALL must be 1 to 8"; exit 2 ;;
esac
export LEVELS CLIENTS ROUNDS FIRST_ROUND LIMIT_S
source "$HERE/gpu_vllm_env.sh" && bash "$HERE/serving_peer_check.sh"
