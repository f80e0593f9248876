#!/usr/bin/env bash
# Energy on one GPU (issue 25), one device call of about 5 minutes on the H200:
#
#   bash benchmarks/gpu_energy.sh
#
# sdxl compile-b4 (16 timed images, the study's count, after the compile warm-up: ~140 s) and train-compile
# compile-sdpa (300 timed steps: ~90 s). Each result's energy over its timed part comes from NVML's total-energy
# counter; the runner's records also keep the integral of the sampled instantaneous power over the same part
# (result.energy.power_integral_j). Printed per result: the two against each other (they should agree within
# 5%), the average watts, joules per image and per 1M training tokens, the verdict.
# SDXL_SETUP=eager-b4 trades the compile for eager if a call runs short (it then says eager-b4).
#
# Wheels the machine lacks (pydantic for gpubench, diffusers for sdxl) are carried in .whl/, as for
# benchmarks/gpu_bounds.sh. Everything lands under $OUT/energy/; the last lines printed are the table.
set -u
FINAL=${OUT:-./gpu-out}/energy; mkdir -p "$FINAL"
WORK=/tmp/energy; rm -rf "$WORK"; mkdir -p "$WORK"
source "$(dirname "$0")/gpu_python_env.sh" || exit 1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv
  python3 -c "import torch; print('torch', torch.__version__)"
  python3 -c "from gpubench.measure.nvml import open_nvml; n, why = open_nvml(); print('nvml', why or n.read())"
} > "$WORK/env.txt" 2>&1
cat "$WORK/env.txt"

run() {  # run NAME WORKLOAD ARGS...: one gpubench run, its records and its run folder under $WORK
  local name=$1; shift
  local started=$SECONDS
  timeout -s INT -k 15 "${LIMIT_S:-280}" gpubench run "$@" --results-dir "$WORK/$name/runs" \
    >"$WORK/$name.jsonl" 2>"$WORK/$name.err"
  echo "$name: exit $? after $((SECONDS - started)) s" | tee -a "$WORK/summary.txt"
}

SDXL_SETUP=${SDXL_SETUP:-compile-b4}
run sdxl sdxl --weights random --setups "$SDXL_SETUP" --set timed_images_b4="${SDXL_IMAGES:-16}"
run train-compile train-compile --setups compile-sdpa --set timed_steps="${TC_STEPS:-300}"

python3 - "$WORK" <<'EOF' | tee "$WORK/table.txt"
import json, sys
from pathlib import Path
print("run setup | counter J | power integral J | integral/counter | avg W | s timed | per unit | verdict")
for path in sorted(Path(sys.argv[1]).glob("*.jsonl")):
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") != "result":
            continue
        if r["status"] != "ok":
            print(f"{path.stem} {r['setup']} | {r['status']}: {r.get('error')}")
            continue
        m = {k: v["value"] for k, v in r["metrics"].items()}
        e = r.get("energy") or {}
        if "energy_j" not in m:
            print(f"{path.stem} {r['setup']} | no energy: {e.get('absent')}")
            continue
        check = e.get("power_integral_j")
        ratio = f"{check / m['energy_j']:.3f}" if check else "-"
        per = "; ".join(f"{k}={v:.4g} {r['metrics'][k]['unit']}" for k, v in m.items() if k.startswith("j_per_"))
        print(f"{path.stem} {r['setup']} | {m['energy_j']:.1f} ({e.get('source')}) | "
              f"{check if check is None else round(check, 1)} | {ratio} | {m['avg_power_w']:.0f} | {e.get('seconds')} | "
              f"{per} | {(r.get('verdict') or {}).get('label') or r['info'].get('verdict')}")
        rate = {k: m[k] for k in ("images_per_s", "s_per_image", "tokens_per_s", "power_pct", "gpu_busy_pct") if k in m}
        print(f"    {rate}")
EOF
tar czf "$FINAL/energy.tgz" -C "$WORK" .
cp "$WORK/table.txt" "$WORK/summary.txt" "$WORK/env.txt" "$FINAL/"
for err in "$WORK"/*.err; do grep -q -i -E "traceback|error" "$err" && { echo "== $err"; tail -n 5 "$err"; }; done
exit 0
