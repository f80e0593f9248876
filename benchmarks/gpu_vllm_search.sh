#!/usr/bin/env bash
# One device call: vllm-serving's rate-search setup on the H200 at MLPerf's Server target (p99 TTFT 2,000 ms, p99
# TPOT 100 ms; the config's default): the highest Poisson rate of Qwen2.5-7B-shaped requests (512 in, 256 out,
# random weights) whose p99s meet it, 1,000 requests a probe, bisected to 5%, then that rate measured once more for
# its goodput, $ and J per 1M output tokens, utilisation and verdict (gpubench/loadgen/search.py).
#
#   bash benchmarks/gpu_vllm_search.sh
#
# vLLM must be unpacked on the machine first (docs/gpu-serving.md: the calls that carry .vllm-h200/c1, c2; this one
# carries nothing while the machine is warm). Runs through benchmarks/gpu_vllm_serving.sh (its vLLM check, its
# tarball). Settings: PRICE (USD/hour for the cost columns, default 3.86, the posts' H100 PCIe rate: no H200 price
# is in the posts), SEARCH_SET (more --set words, e.g. "search_tolerance=0.1"), STUDY_LIMIT_S (default 540).
# Expected device time: server ready 100-140 s on a cold compile cache, then about 8 loads of 1,000 requests at
# 20-60 requests/s (20-50 s each, warm-up included) and the confirming load: 420-500 s in all; the search stops at
# search_max_probes=10 loads whatever the tolerance, and STUDY_LIMIT_S interrupts it (the probes' lines are kept).
# Comes back: vllm-serving-<time>.tgz (records, run folder, server log), summary.txt, search.md (the probe table).
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
here=$(dirname "$0")
sets=()
for word in ${SEARCH_SET:-}; do sets+=(--set "$word"); done
STUDY_LIMIT_S=${STUDY_LIMIT_S:-540} bash "$here/gpu_vllm_serving.sh" \
  "vllm-serving --setups rate-search --price ${PRICE:-3.86} ${sets[*]}"
status=$?
python3 "$here/search_table.py" /tmp/vllm-serving/runs >"$OUT/search.md" 2>&1 \
  || grep -h '"phase": *"probe"' /tmp/vllm-serving/vllm-serving-*.jsonl 2>/dev/null | grep -h 'probe [0-9]*:.*: m' \
     >>"$OUT/search.md"  # no result (interrupted): the probes said so as they ran
cat "$OUT/search.md"
exit "$status"
