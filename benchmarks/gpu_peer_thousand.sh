#!/usr/bin/env bash
# Issue 33's H200 hold: the peer table against `vllm bench serve` at 128, 256, 512 and 1,024 users on one vLLM
# (--max-num-seqs 1024), and an open loop at 200 requests/s with short outputs, in five calls made back to back.
# benchmarks/serving_peer_check.sh does the work (each client's CPU, memory and the server's running and waiting
# gauges through its timed load, the server's API process and engine core CPU over each client's run; each call's
# folder comes back as one .tgz with table.txt). The server starts once, in call 2, in a session of its own
# (SERVER_KEEP_DIR), and calls 3-5 reuse it: a start is 100-140 s, which five starts made the old eight-call plan
# (~49 device-minutes) too long for a 30-minute budget.
#
#   CALL=1  carry .vllm-h200/c1 and .whl: piece 1 copied to /tmp (PACER=1: also the pacer at 200/s on the known-timing
#           server, one and two client processes, PACER_REQUESTS each; met its targets on 12-04c and 12-05: ~150 s)
#   CALL=2  carry .vllm-h200/c2: unpack; the server started and kept; 128 and 256 users, 1,280 requests a client,
#           vLLM's client first (~330 s)
#   CALL=3  512 users, 5,120 requests a client (10 waves), vLLM's first (~460 s)
#   CALL=4  1,024 users, 5,120 requests a client (5 waves), gpubench first (~430 s)
#   CALL=5  the open loop: 200 requests/s, 12,000 requests of 16 tokens out, each client; the server stopped (~170 s)
#   CALL=6  (a later session) 512 users again in the other order, gpubench first: a second round, so the table shows
#           each client's run-to-run noise beside the gap (FIRST_ROUND=2; pool with CALL=3's folder)
#
# One warm-up request a user (WARMUP_X=1). Both clients run the same requests: every answer is 256 tokens, so a closed
# loop moves in waves of `users` requests that start and end together, and runs of unlike lengths measure unlike
# mixes of first wave, steady waves and drain (serving_peer_table.py marks them neq; the 12-04c hold's were). What a
# run costs, measured on 12-05 at 512 users: a server start 94-149 s; each client's 5,120 requests ~230 s of wall
# time, 152 s of it timed (33.6-36 requests/s), the rest its start, its 512 warm-ups (~16 s) and, for gpubench, 57 s
# of building 5,632 exact-length prompts one by one (batched since). The 12-04c plan's 10,000 and 7,000 requests at
# 512 users (~37 requests/s and ~5 s of overhead assumed) did not fit a call. About 1,500 device-seconds for calls
# 1-5 with the machine's start, back to back: the machine goes back after ~30 s idle, and with it the kept server and
# /tmp's vLLM. A call that finds no kept server starts one and says so (~120 s more). gpubench's 10,000-request runs
# at 512 and 1,024 users, with the client's memory at 1,024 streams, are in benchmarks/results/h200-2026-12-04c.
# Pool two calls' folders: python3 benchmarks/serving_peer_table.py peer-c3 peer-c6 (after untarring).
#
# LEVELS, where set (even empty), replaces calls 2, 3, 4 and 6's levels. A shorter plan for a session whose budget
# a refused start or two has cut (~1,340 device-s with the machine's start), for what 12-05 left open: the 512-user
# gap in both orders and 1,024 users (128 and 256 agreed within 2% on 12-05):
#   CALL=1; CALL=2 LEVELS= (the server started and kept, ~130 s); CALL=3 LEVELS=512:3072 (6 waves, ~340 s);
#   CALL=6 LEVELS=512:3072 (~340 s); CALL=4 (~430 s)
# CLIENTS, where set, replaces a call's clients and their order. The 512-user gap's test (written 12-08, when no
# machine started): every run logs the server's own counters and the GPU's clock and power, so the server says
# which client's figure its work matched and whether the GPU ran slower for one of them. Smallest hold that answers
# it (~560 device-s with the start): CALL=1; CALL=2 LEVELS=512:2048 CLIENTS="vllm gpubench vllm+gpubench-prompts"
# (the server started, then A B and vLLM's client on the prompts gpubench builds: the same prompts from both
# clients; ~450 s). Then, as the budget allows: CALL=6 LEVELS=512:2048 CLIENTS="gpubench vllm" (B A, ~200 s);
# CALL=4 LEVELS=1024:4096 (~300 s); CALL=5 (~150 s).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
export SERVER_EXTRA="--max-num-seqs 1024 ${SERVER_EXTRA:-}"
export SERVER_KEEP_DIR=${SERVER_KEEP_DIR:-/tmp/gpubench-peer-server}
case "${CALL:?set CALL=1..6}" in
  1) source "$HERE/gpu_vllm_env.sh"; source "$HERE/gpu_python_env.sh" || exit 1
     [ "${PACER:-0}" = 1 ] || exit 0
     { echo "cores $(nproc); somaxconn $(cat /proc/sys/net/core/somaxconn); load $(cut -d' ' -f1-3 /proc/loadavg)"
       for processes in 1 2; do
         echo "== rate 200/s, $processes client process(es), ${PACER_REQUESTS:-12000} requests"
         timeout 150 python3 "$HERE/loadgen_pacer.py" --rate 200 --requests "${PACER_REQUESTS:-12000}" \
           --processes "$processes"
       done
     } 2>&1 | tee "$OUT/pacer-200.txt"
     exit 0 ;;
  2) LEVELS=${LEVELS-"128:1280 256:1280"}; CLIENTS=${CLIENTS:-"vllm gpubench"}; LIMIT_S=470 ;;
  3) LEVELS=${LEVELS-"512:5120"}; CLIENTS=${CLIENTS:-"vllm gpubench"}; LIMIT_S=200 ;;
  4) LEVELS=${LEVELS-"1024:5120"}; CLIENTS=${CLIENTS:-"gpubench vllm"}; LIMIT_S=200 ;;
  5) LEVELS=""; CLIENTS="vllm gpubench"; LIMIT_S=200; export SERVER_STOP=1
     export OPEN_RATE=200 OPEN_REQUESTS=12000 OPEN_OUTLEN=16 ;;
  6) LEVELS=${LEVELS-"512:5120"}; CLIENTS=${CLIENTS:-"gpubench vllm"}; LIMIT_S=200; export FIRST_ROUND=2 ;;
  *) echo "CALL must be 1 to 6"; exit 2 ;;
esac
export LEVELS CLIENTS LIMIT_S ROUNDS=1 FIRST_ROUND=${FIRST_ROUND:-1} VLLM_CLIENT_REQUESTS=${VLLM_CLIENT_REQUESTS:-}
export WARMUP_X=${WARMUP_X:-1}
source "$HERE/gpu_vllm_env.sh" && bash "$HERE/serving_peer_check.sh"
