#!/usr/bin/env bash
# The open-loop pacer (benchmarks/loadgen_pacer.py) on the device machine's quiet cores: issue 23's target is, at
# 500 requests/s, the achieved rate within 1% of the requested and the schedule delay p99 under 1 ms. Here the
# 2 shared cores give the client 14-22% of a core and a p99 of 13-19 ms; this shows what it does with cores of its
# own. Against the tests' server of known timing, in the same machine; no GPU used. About a minute.
#
#   bash benchmarks/gpu_loadgen_pacer.sh      # carry .whl (pydantic for gpubench); $OUT/pacer.txt
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
{ echo "cores $(nproc); $(lscpu | grep -m1 'Model name'); load $(cut -d' ' -f1-3 /proc/loadavg)"
  for rate in 500 1000 2000; do
    for processes in 1 2; do
      echo "== rate $rate/s, $processes client process(es), $((rate * 10)) requests"
      timeout 120 python3 "$(dirname "$0")/loadgen_pacer.py" --rate "$rate" --requests $((rate * 10)) \
        --processes "$processes"
    done
  done
} 2>&1 | tee "$OUT/pacer.txt"
