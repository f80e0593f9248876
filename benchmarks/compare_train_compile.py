"""Compare `gpubench run train-compile` records with the study script's output, setup by setup.

usage: python benchmarks/compare_train_compile.py GPUBENCH.jsonl STUDY.jsonl
Agreement targets (issue 2): step time within 3%, peak memory within 0.1 GB.
"""

import json
import sys
from pathlib import Path

STEP_TOLERANCE, MEMORY_TOLERANCE_GB = 0.03, 0.1


def load(gpubench_path: str, study_path: str):
    ours, theirs = {}, {}
    for line in Path(gpubench_path).read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "result":
            ours[record["setup"]] = record
    for line in Path(study_path).read_text().splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            theirs[f"{row['mode']}-{row['attn']}"] = row
    return ours, theirs


def main(gpubench_path: str, study_path: str) -> int:
    ours, theirs = load(gpubench_path, study_path)
    print(f"{'setup':<14} {'gpubench step ms':>16} {'study step ms':>13} {'diff':>7} "
          f"{'gpubench GB':>11} {'study GB':>8} {'diff GB':>7} {'first s (g/s)':>14}  verdict")
    failures = 0
    for setup in ("eager-sdpa", "compile-sdpa", "eager-eager", "compile-eager"):
        mine, ref = ours.get(setup), theirs.get(setup)
        if not mine or not ref:
            print(f"{setup:<14} missing ({'gpubench' if not mine else 'study'})")
            failures += 1
            continue
        if mine["status"] != "ok":
            print(f"{setup:<14} gpubench status {mine['status']}: {mine.get('error')}")
            failures += 1
            continue
        m = {k: v["value"] for k, v in mine["metrics"].items()}
        peak_gb = m["peak_mem_gib"] * 2**30 / 1e9 if "peak_mem_gib" in m else m["peak_mem_gb"]  # the study's GB
        step_diff = m["step_ms"] / ref["step_ms"] - 1
        mem_diff = peak_gb - ref["peak_gb"]
        ok = abs(step_diff) <= STEP_TOLERANCE and abs(mem_diff) <= MEMORY_TOLERANCE_GB
        failures += not ok
        print(f"{setup:<14} {m['step_ms']:>16.1f} {ref['step_ms']:>13.1f} {step_diff:>+7.1%} "
              f"{peak_gb:>11.2f} {ref['peak_gb']:>8.2f} {mem_diff:>+7.2f} "
              f"{m['first_step_s']:>6.1f}/{ref['first_step_s']:<6.1f}  {'agree' if ok else 'DISAGREE'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
