#!/usr/bin/env bash
# One device call (H200, about 1.5 min): the load generator's own cost and accuracy against the
# fake server of known timing (no GPU), then `gpubench loadgen` at 1, 16 and 64 users against a
# GPU-backed server (benchmarks/gpu_loadgen.py: random-weight Qwen2.5-7B shape, bf16, static
# batching). Shortened from the posts' 512 in / 256 out to 512 in / 64 out: per-token numbers keep
# their meaning, the run fits the budget. Everything lands in $OUT/loadgen (or ./gpu-out/loadgen).
set -u
OUT=${OUT:-./gpu-out}; D="$OUT/loadgen"; mkdir -p "$D"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1
set -x
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nproc
  python3 -c "import torch, transformers, aiohttp; print('torch', torch.__version__, 'transformers', transformers.__version__, 'aiohttp', aiohttp.__version__)"
} > "$D/env.txt" 2>&1

# 1. The client alone: medians against the server's own timing, CPU per token (about 30 s).
timeout 120 python3 benchmarks/loadgen_accuracy.py --users 1,16,64,256 --rounds 4 > "$D/accuracy.jsonl" 2> "$D/accuracy.err"
echo "accuracy exit: $?"

# 2. The GPU server, then the load generator at 1, 16 and 64 users.
python3 benchmarks/gpu_loadgen.py --port 8000 --max-batch 64 ${SERVER_ARGS:-} > "$D/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 120); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/v1/models', timeout=2)" 2>/dev/null && break
  kill -0 $SERVER 2>/dev/null || break
  sleep 1
done
for U in 1 16 64; do
  case $U in 1) N=6;; 16) N=32;; 64) N=128;; esac
  timeout 150 gpubench loadgen --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b-random --users $U --requests $N \
    --warmup $U --input-tokens 512 --output-tokens 64 --ignore-eos --vocab-size 151643 \
    --results-dir /tmp/loadgen-results > "$D/u$U.jsonl" 2> "$D/u$U.err"
  echo "loadgen u$U exit: $?"
done
kill $SERVER; wait $SERVER 2>/dev/null
python3 - "$D" <<'PY' | tee "$D/summary.txt"
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
keys = ["output_tokens_per_s", "per_user_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "itl_ms_p50",
        "e2e_ms_p50", "requests_failed", "usage_mismatches", "client_cpu_us_per_token"]
print("users\tstatus\t" + "\t".join(keys))
for u in (1, 16, 64):
    for line in (d / f"u{u}.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kind") == "result":
            m = r["metrics"]
            print(f"{u}\t{r['status']}\t" + "\t".join(f"{m[k]['value']:.2f}" if k in m else "-" for k in keys))
PY
