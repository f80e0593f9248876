#!/usr/bin/env bash
# Noise check for the one host-bound setup (eager + SDPA): N interleaved runs of gpubench and of the
# study's bare script, each a fresh process, then medians and spreads side by side.
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"; N=${N:-5}
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
for i in $(seq 1 "$N"); do
  gpubench run train-compile --setups eager-sdpa --results-dir /tmp/r >>"$OUT/gpubench.jsonl" 2>>"$OUT/gpubench.err"
  python3 benchmarks/study_scripts/train_compile_study.py eager sdpa >>"$OUT/study.jsonl" 2>>"$OUT/study.err"
done
python3 - "$OUT/gpubench.jsonl" "$OUT/study.jsonl" <<'PY' | tee "$OUT/repeats.txt"
import json, statistics, sys
ours = [json.loads(l)["metrics"]["step_ms"]["value"] for l in open(sys.argv[1]) if '"kind":"result"' in l]
theirs = [json.loads(l)["step_ms"] for l in open(sys.argv[2]) if l.startswith("{")]
for name, xs in (("gpubench", ours), ("study", theirs)):
    print(f"{name:<9} n={len(xs)} median={statistics.median(xs):.1f} min={min(xs):.1f} max={max(xs):.1f} "
          f"cv={statistics.stdev(xs) / statistics.mean(xs):.1%} runs={[round(x, 1) for x in xs]}")
print(f"median difference: {statistics.median(ours) / statistics.median(theirs) - 1:+.1%}")
PY
