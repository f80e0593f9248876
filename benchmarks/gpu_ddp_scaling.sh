#!/usr/bin/env bash
# ddp-scaling at the study's sizes (GPT-2 124M and 355M, micro-batch 8 x 1,024 tokens per GPU, bf16 autocast,
# fused AdamW) on every GPU this host lends (the lead's wrapper has installed gpubench). One process per GPU,
# NCCL, the environment's NCCL_* settings untouched (they are recorded in each result's info).
# Setups: both all-reduce tests and every 1- and 2-GPU setup; the 4-GPU setups only on a host with 4 GPUs,
# else one of them (allreduce-4gpu) stays in to show the `skipped` row. On 1 GPU the 2-GPU setups skip too.
# On 2-3 GPUs, the variants' code (bf16 hook + accumulation) also runs on 2 NCCL ranks, outside the catalog grid.
# Shortened: 20 timed steps after 10 warm-up instead of 40 (the median step is the same quantity);
# all-reduce 10 timed iterations per size instead of 20. Budget: about 3.5 minutes on 2 x H200.
set -x
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT/ddp-scaling"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  env | grep '^NCCL_' || echo 'no NCCL_* variables set'
} >"$OUT/ddp-scaling/env.txt" 2>&1
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
if [ "${GPUS:-0}" -ge 4 ]; then
  SETUPS=""  # all of them
else
  SETUPS="--setups allreduce-2gpu,allreduce-4gpu,124m-1gpu,124m-1gpu-accum4,124m-2gpu,355m-1gpu,355m-1gpu-accum4,355m-2gpu"
fi
# shellcheck disable=SC2086
gpubench run ddp-scaling --weights random $SETUPS --set timed_steps=20 --set allreduce_iters=10 \
  --results-dir "$OUT/ddp-scaling/results" >"$OUT/ddp-scaling/run.jsonl" 2>"$OUT/ddp-scaling/run.err"
echo "gpubench exit: $?"
python3 - "$OUT/ddp-scaling/run.jsonl" <<'PY' | tee "$OUT/ddp-scaling/table.txt"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
derived = {r["setup"]: r["metrics"] for r in records if r["kind"] == "derived"}
for r in (r for r in records if r["kind"] == "result"):
    m = {k: v["value"] for k, v in {**r["metrics"], **derived.get(r["setup"], {})}.items()}
    shown = " ".join(f"{k}={m[k]:,.2f}" for k in ("tokens_per_s", "step_ms", "speedup", "scaling_efficiency_pct",
                     "gradient_mb_per_step", "allreduce_ms_est", "peak_mem_gib", "achieved_tflops", "pct_of_peak", "busbw_median_gbps",
                     "busbw_peak_gbps", "algbw_median_gbps") if k in m)
    print(f"{r['setup']:<18} {r['status']:<8} {shown or r.get('error') or ''}")
    if r["setup"].startswith("allreduce") and r["status"] == "ok":
        for row in r["info"]["allreduce"]:
            print(f"    {row['bytes'] / 2**20:>6.0f} MB  {row['time_us']:>10.1f} us  algbw {row['algbw_gbps']:7.2f}"
                  f"  busbw {row['busbw_gbps']:7.2f} GB/s")
first = next((r for r in records if r["kind"] == "result" and r["status"] == "ok"), None)
if first:
    info = first["info"]
    print("backend", info.get("backend"), "nccl", info.get("nccl_version"), "NCCL env", info.get("nccl_env"))
    print(info.get("topology") or info.get("topology_note"))
PY
tail -n 30 "$OUT/ddp-scaling/run.err"
# The catalog's variant setups are 4-GPU ones. On a 2-GPU host, prove their code path on NCCL anyway:
# 124M with the bf16 hook and 4 micro-batches per all-reduce on 2 ranks, through the workload's own
# join_group/train (not a catalog setup, so not a gpubench result; printed for the log only).
if [ "${GPUS:-0}" -ge 2 ] && [ "${GPUS:-0}" -lt 4 ]; then
  cat >/tmp/ddp_both_2gpu.py <<'PY'
import json
import torch.distributed as dist
from gpubench.workloads import ddp_scaling as d
recipe = d.Recipe(2, "124m", bf16_hook=True, accum=4)
config = d.Config(timed_steps=10)
group = d.join_group(recipe, config)
info = {}
metrics = d.train(recipe, config, group, info, lambda *a, **k: None)
if group.rank == 0:
    print(json.dumps({"variant": "124m-2gpu-both", **metrics, "replicas_in_sync": info["replicas_in_sync"]}))
dist.destroy_process_group()
PY
  PORT=$((29500 + RANDOM % 1000))
  for r in 0 1; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r \
      timeout 120 python3 /tmp/ddp_both_2gpu.py >>"$OUT/ddp-scaling/variant-2gpu.txt" 2>>"$OUT/ddp-scaling/variant-2gpu.err" &
  done
  wait
  cat "$OUT/ddp-scaling/variant-2gpu.txt"; tail -n 5 "$OUT/ddp-scaling/variant-2gpu.err"
fi
