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
# is in the posts), SEARCH_SET (more --set words, e.g. "search_tolerance=0.1"), STUDY_LIMIT_S (default 550).
# Expected device time, from the H200's c64 level (30 requests/s, 320 prompts in 18 s): server ready 100-140 s on a
# cold compile cache; the first load (1,000 requests at once) 30-40 s; then about 6-7 loads of 1,000 requests at
# 20-60 requests/s, each 1,000 / rate s plus ~10 s (building 1,000 text prompts, the warm-up, the last answers), and
# the confirming load: 430-520 s in all. The search stops at search_max_probes=10 loads whatever the tolerance, and
# STUDY_LIMIT_S interrupts it (each probe's line is kept in the records); search_tolerance=0.1 saves a load.
# Comes back: vllm-serving-<time>.tgz (records, run folder, server log), summary.txt, search.md (the probe table).
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
here=$(dirname "$0")
sets=()
for word in ${SEARCH_SET:-}; do sets+=(--set "$word"); done
STUDY_LIMIT_S=${STUDY_LIMIT_S:-550} bash "$here/gpu_vllm_serving.sh" \
  "vllm-serving --setups rate-search --price ${PRICE:-3.86} ${sets[*]}"
status=$?
python3 "$here/search_table.py" /tmp/vllm-serving/runs >"$OUT/search.md" 2>&1 \
  || grep -h '"phase": *"probe"' /tmp/vllm-serving/vllm-serving-*.jsonl 2>/dev/null | grep -h 'probe [0-9]*:.*: m' \
     >>"$OUT/search.md"  # no result (interrupted): the probes said so as they ran
cat "$OUT/search.md"
exit "$status"
