#!/usr/bin/env bash
# The harness's one memory tracker and one NVML sampler on a real GPU (issue 32), one device call of about 3 minutes
# on the H200 (carry .whl/ with pydantic, as for benchmarks/gpu_energy.sh):
#
#   bash benchmarks/gpu_harness_trackers.sh
#
# 1. probe: a worker runs two setups of a probe workload in process; each resets ctx.memory on cuda, holds a 6 GiB
#    tensor for 0.4 s, frees it, and reads torch's peak (ctx.memory.peak) and NVML's (peak_bytes(NVML_USED)). Expected:
#    torch's peak 6.0 GiB (+ little), NVML's at least that (+ the CUDA context), energy from NVML's counter, and no
#    thread reading NVML beside the worker's one sampler ("gpubench-utilisation").
# 2. train-compile --smoke eager-sdpa and embed --smoke bge-small-128 on the GPU at --price 3.86: peak_mem_gib from
#    torch's allocator (info peak_mem), embed's tuned_peak_mem_gib and tuned_usd_per_1M_passages (costed by the
#    runner), each metric's role in the records, the price on run_started and not in the environment (schema 1.4).
# Everything lands under $OUT/trackers/; the last lines printed are the checks, each "ok" or "FAILED".
set -u
FINAL=${OUT:-./gpu-out}/trackers; mkdir -p "$FINAL"
WORK=/tmp/trackers; rm -rf "$WORK"; mkdir -p "$WORK"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1

cat > "$WORK/tracker_probe.py" <<'EOF'
import threading
import time
from dataclasses import dataclass

from gpubench.measure.gpu_memory import GIB, NVML_USED
from gpubench.workload import MetricDef

@dataclass
class Config:
    gib: int = 6

SMOKE = {}
METRICS = {"nvml_peak_gib": MetricDef("GiB", "lower"), "other_nvml_threads": MetricDef("threads", None)}

def run_setup(setup, config, ctx):
    import torch

    torch.zeros(1, device="cuda")  # the CUDA context, before the part
    ctx.memory.reset("cuda")
    ctx.progress("timed")
    held = torch.ones(config.gib * GIB // 4, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    time.sleep(0.4)
    del held
    torch.cuda.empty_cache()
    ctx.progress("after")
    metrics = ctx.memory.peak("cuda")
    metrics["nvml_peak_gib"] = ctx.memory.peak_bytes("cuda", NVML_USED) / GIB
    names = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    ctx.info["threads"] = names
    metrics["other_nvml_threads"] = float(sum("nvml" in n.lower() for n in names))
    return metrics
EOF

python3 - "$WORK" <<'EOF' > "$WORK/probe.jsonl" 2> "$WORK/probe.err"
import io, sys
sys.path.insert(0, sys.argv[1])
from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.run import worker
spec = WorkloadSpec(name="tracker-probe", title="t", study="t", setups=("a", "b"), gpus="H200", gpu_count=1,
                    min_gpu_memory_gb=8, expected_minutes=1, dependencies={}, module="tracker_probe")
WORKLOADS._items[spec.name] = spec
job = {"workload": spec.name, "setups": ["a", "b"], "repeat": 1, "run_id": "probe", "smoke": True,
       "weights": "random", "config": {}}
worker.Worker(job, sys.stdout).run_group()
EOF
echo "probe: exit $?" | tee -a "$WORK/summary.txt"

run() {  # run NAME WORKLOAD ARGS...: one gpubench run, its records and its run folder under $WORK
  local name=$1; shift
  local started=$SECONDS
  timeout -s INT -k 15 "${LIMIT_S:-200}" gpubench run "$@" --results-dir "$WORK/$name/runs" \
    >"$WORK/$name.jsonl" 2>"$WORK/$name.err"
  echo "$name: exit $? after $((SECONDS - started)) s" | tee -a "$WORK/summary.txt"
}
run train-compile train-compile --smoke --setups eager-sdpa --price 3.86
run embed embed --smoke --setups bge-small-128 --price 3.86

python3 - "$WORK" <<'EOF' | tee "$WORK/checks.txt"
import json, sys
from pathlib import Path
work = Path(sys.argv[1])

def records(name):
    out = []
    for line in (work / f"{name}.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out

def check(what, ok, detail=""):
    print(f"{'ok' if ok else 'FAILED'}: {what} {detail}")

for r in (r for r in records("probe") if r.get("kind") == "result"):
    if r["status"] != "ok":
        check(f"probe {r['setup']}", False, f"{r['status']}: {r.get('error')}")
        continue
    m = {k: v["value"] for k, v in r["metrics"].items()}
    check(f"probe {r['setup']} torch peak ~6 GiB", 6.0 <= m["peak_mem_gib"] < 6.5, f"{m['peak_mem_gib']:.3f} GiB")
    check(f"probe {r['setup']} NVML peak >= torch's", m["nvml_peak_gib"] >= m["peak_mem_gib"],
          f"{m['nvml_peak_gib']:.3f} GiB")
    check(f"probe {r['setup']} one NVML sampler", m["other_nvml_threads"] == 0 and
          r["info"]["threads"].count("gpubench-utilisation") == 1, str(r["info"]["threads"]))
    check(f"probe {r['setup']} energy from the counter", (r.get("energy") or {}).get("source") ==
          "NVML total-energy counter", str(r.get("energy")))
    check(f"probe {r['setup']} roles", r["metrics"]["peak_mem_gib"].get("role") == "peak_memory" and
          r["metrics"].get("energy_j", {}).get("role") == "energy")
for name, tuned in (("train-compile", False), ("embed", True)):
    recs = records(name)
    started = next((r for r in recs if r.get("kind") == "run_started"), {})
    check(f"{name} price on run_started", started.get("price_usd_per_hour") == 3.86 and
          "price_usd_per_hour" not in started.get("environment", {}), str(started.get("schema_version")))
    for r in (r for r in recs if r.get("kind") == "result"):
        if r["status"] != "ok":
            check(f"{name} {r['setup']}", False, f"{r['status']}: {r.get('error')}")
            continue
        m = r["metrics"]
        check(f"{name} {r['setup']} peak from torch on {r.get('device')}", "peak_mem_gib" in m and
              r["info"].get("peak_mem") == "GPU: torch.cuda.max_memory_allocated", str(m.get("peak_mem_gib")))
        costs = {k: (v["value"], v.get("role")) for k, v in m.items() if v.get("role") in ("cost", "value")}
        check(f"{name} {r['setup']} costs by the runner", bool(costs), str(costs))
        if tuned:
            check(f"{name} tuned cost and peak", m.get("tuned_usd_per_1M_passages", {}).get("role") == "cost"
                  and m.get("tuned_peak_mem_gib", {}).get("role") == "peak_memory",
                  f"{m.get('tuned_usd_per_1M_passages')} {m.get('tuned_peak_mem_gib')}")
EOF
tar czf "$FINAL/trackers.tgz" -C "$WORK" .
cp "$WORK/checks.txt" "$WORK/summary.txt" "$FINAL/"
for err in "$WORK"/*.err; do grep -q -i -E "traceback|error" "$err" && { echo "== $err"; tail -n 5 "$err"; }; done
exit 0
