#!/usr/bin/env bash
# whisper's five setups on one H200 with faster-whisper on the GPU: CTranslate2 built for CUDA 13
# (tools/ctranslate2_cuda_build.sh) loading the cuBLAS 13 of the machine's torch, and a bare faster-whisper
# script back to back with the harness (the harness's overhead, within 3%). docs/gpu-whisper.md has the plan.
#
#   bash benchmarks/gpu_whisper_ct2.sh prepare   # ~2.5 min: install, smoke check, random models converted, audio
#   bash benchmarks/gpu_whisper_ct2.sh harness   # ~6 min: gpubench run whisper, five setups, 2 repeats
#   bash benchmarks/gpu_whisper_ct2.sh bare      # ~4.5 min: benchmarks/whisper_bare.py, four setups, twice
#   bash benchmarks/gpu_whisper_ct2.sh sampler   # ~6 min: what the harness's sampler costs (whisper_sampler_cost.py)
#                                                #   beside the harness with the sampler off, turbo and sequential
#   ROUNDS="1 2" bash benchmarks/gpu_whisper_ct2.sh rounds  # ~4 min a round: the harness's five setups, then the
#                                                #   bare script's four, in turns (ROUND_AUDIO_S of audio, 1200;
#                                                #   ROUND_SETUPS narrows them)
#
# Carry in the first call: .ct2-cuda (the CTranslate2 wheel), .whl-whisper (faster-whisper, av, jiwer, rapidfuzz;
# fill it with `bash benchmarks/gpu_whisper_ct2.sh wheels` here) and .whl (gpubench's own, docs/gpu-serving.md).
# Each part installs what is missing and converts what the machine lost when it was released between calls (the
# conversions then cost ~1.5 min more). Results under
# $OUT: env.txt, smoke.txt, then harness.jsonl/.err + harness-runs.tar.gz, or bare.jsonl/.err.
# WHISPER_CT2_CPU=1: a dry run on a machine without a GPU (this one's python, --smoke sizes, random tiny).
set -u
OUT=${OUT:-./gpu-out}
PART=${1:-}
CPU=${WHISPER_CT2_CPU:-0}
WORK=${WHISPER_CT2_WORK:-/tmp/whisper-ct2}
SETUPS_FW=fw-turbo-fp16-b16,fw-large-v3-fp16-b16,fw-large-v3-int8-b16,fw-large-v3-fp16-seq

case "$PART" in
  wheels)  # here, not on the device: the wheels the device lacks, at the image's pins (images/whisper), for its
    # Python 3.12 (jiwer is what `gpubench run whisper` checks for; rapidfuzz is its compiled dependency)
    mkdir -p .whl-whisper
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
      --platform manylinux_2_17_x86_64 -d .whl-whisper faster-whisper==1.2.1 av==18.1.0 jiwer==4.0.0 rapidfuzz==3.13.0 \
      || exit 1
    ls -l .whl-whisper .ct2-cuda 2>/dev/null
    exit 0 ;;
  prepare|harness|bare|sampler|rounds) ;;
  *) echo "usage: $0 wheels|prepare|harness|bare|sampler|rounds (docs/gpu-whisper.md)" >&2; exit 2 ;;
esac

mkdir -p "$OUT" "$WORK"
# the here-documents below run with the repository as the working directory: without this, its gpubench/ folder
# (no workloads/ inside: pyproject maps them) shadows the installed package (seen on the H200, 2026-12-03)
export PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
export XDG_CACHE_HOME=$WORK/cache  # the converted models, for the harness's setups and the bare script alike

if [ "$CPU" = 1 ]; then
  PY=${PYTHON:-.venv/bin/python}
  export PATH="$(dirname "$PY"):$PATH"
  RUN_ARGS=(--smoke --weights random)
  BARE_ARGS=(--device cpu --cpu-threads 1 --warmup-s 1 --batch-size 16)
  SHAPES=(tiny tiny)
  FIXED_TOKENS=8
else
  PY=python3
  source benchmarks/gpu_python_env.sh || exit 1
  if ! "$PY" -c "import ctranslate2" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/wheels \
      .ct2-cuda/ctranslate2-*.whl || { echo "no CTranslate2 wheel: carry .ct2-cuda"; exit 1; }
  fi
  # CTranslate2 loads libcublas.so.13 by name (dlopen): the copy torch's wheels installed (nvidia-cublas).
  cublas_dir=$("$PY" - <<'EOF'
import glob, os, sys
for root in sys.path:
    for found in glob.glob(os.path.join(root, "nvidia", "*", "lib", "libcublas.so.13")):
        print(os.path.dirname(found)); raise SystemExit
EOF
)
  export LD_LIBRARY_PATH=${cublas_dir:+$cublas_dir:}${LD_LIBRARY_PATH:-}
  RUN_ARGS=(--weights random --set synthetic_audio_s=600 --repeats 2)
  BARE_ARGS=(--device cuda)
  SHAPES=(large-v3-turbo large-v3)
  FIXED_TOKENS=100
fi

{ date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tail -n +2
  echo "libcublas.so.13 from: ${cublas_dir:-not searched (CPU run)}"
  "$PY" -m pip list 2>/dev/null | grep -i -E '^(torch|ctranslate2|faster.whisper|av|transformers|nvidia-cublas) '
} >"$OUT/env.txt" 2>&1

# The smoke check, in every part (~10 s; a failure stops the faster-whisper setups, not the transformers one):
# CTranslate2's version and GPUs, then random Whisper tiny converted, loaded on the device, one window encoded
# and 5 tokens decoded in float16 (the gate), then in int8_float16 (cuBLAS 13's int8 GEMM is the part most likely
# to fail; a failure there is printed and the int8 setup fails alone).
SMOKE_DEVICE=$([ "$CPU" = 1 ] && echo cpu || echo cuda)
timeout 300 "$PY" - "$SMOKE_DEVICE" >"$OUT/smoke.txt" 2>&1 <<'EOF'
import sys, time
import numpy as np
import ctranslate2
device = sys.argv[1]
print("ctranslate2", ctranslate2.__version__, "cuda devices", ctranslate2.get_cuda_device_count())
if device == "cuda":
    print("cuda compute types", sorted(ctranslate2.get_supported_compute_types("cuda")))
from gpubench.workloads.whisper import random_weights
folder = random_weights.ctranslate2_model("tiny", 0)
ids = random_weights.token_ids("tiny")
prompt = [ids[t] for t in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")]
mel = np.random.default_rng(0).standard_normal((2, 80, 3000), "float32")
features = ctranslate2.StorageView.from_array(mel)  # a view of `mel`, which stays alive


def check(compute_type):
    started = time.perf_counter()
    model = ctranslate2.models.Whisper(str(folder), device=device, compute_type=compute_type)
    encoded = model.encode(features, to_cpu=True)
    result = model.generate(features, [prompt] * 2, max_length=10, suppress_tokens=[ids["<|endoftext|>"]])
    print(f"{compute_type}: encoded {tuple(encoded.shape)}, decoded {[len(r.sequences_ids[0]) for r in result]} tokens"
          f" in {time.perf_counter() - started:.2f} s", flush=True)


check("float16" if device == "cuda" else "float32")
print("CT2 SMOKE OK", flush=True)  # before int8: a crash there must not stop the float16 setups
try:
    check("int8_float16" if device == "cuda" else "int8")
except Exception as exc:  # cuBLAS 13's int8 GEMM (OpenNMT/CTranslate2#1933): say so, the rest runs
    print(f"int8 FAILED: {type(exc).__name__}: {exc}")
EOF
if grep -q "CT2 SMOKE OK" "$OUT/smoke.txt"; then
  FW_OK=1
else
  FW_OK=0
  echo "CT2 SMOKE FAILED: faster-whisper setups not run (smoke.txt):"; tail -5 "$OUT/smoke.txt"
fi
cat "$OUT/smoke.txt"

convert() {  # the random models (kept in ~/.cache while the machine is warm) and the synthetic audio
  "$PY" - "$WORK" "$FIXED_TOKENS" "${SHAPES[@]}" <<'EOF'
import sys, time
import numpy as np
from gpubench.workloads import whisper
from gpubench.workloads.whisper import audio, random_weights
work, tokens, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
for shape in dict.fromkeys(shapes):
    started = time.perf_counter()
    folder = random_weights.ctranslate2_model(shape, 0)
    print(f"{shape}: {folder} ({time.perf_counter() - started:.0f} s)")
    open(f"{work}/model-{shape}", "w").write(str(folder))
cpu = shapes[0] == "tiny"
# as the harness cuts --set synthetic_audio_s, so the bare script reads the same clips
for name, seconds in (("audio", 600.0), ("audio-1200", 1200.0), ("audio-1800", 1800.0)):
    clips = ([c.audio for c in audio.from_folder(audio.AUDIOEVAL_EN)] if cpu
             else [c.audio for c in audio.synthetic(seconds, whisper.Config().seed)])
    np.savez(f"{work}/{name}.npz", **{f"clip{i:03d}": clip for i, clip in enumerate(clips)})
    print(f"{name}: {len(clips)} clips, {sum(len(c) for c in clips) / 16000:.1f} s")
EOF
}

fw_models() {  # the faster-whisper parts: exit unless the smoke passed; the models converted, each setup's in MODEL_OF
  [ "$FW_OK" = 1 ] || exit 1
  convert >"$WORK/convert.log" 2>&1 || { cat "$WORK/convert.log"; exit 1; }
  local turbo large
  turbo=$(cat "$WORK/model-${SHAPES[0]}") large=$(cat "$WORK/model-${SHAPES[1]}")
  declare -gA MODEL_OF=([fw-turbo-fp16-b16]=$turbo [fw-large-v3-fp16-b16]=$large [fw-large-v3-fp16-seq]=$large
    [fw-large-v3-int8-b16]=$large)
}
model_args() {  # MODEL_ARGS: the bare script's --model SETUP=FOLDER for the faster-whisper setups among $1 (a,b,...)
  local setup; MODEL_ARGS=()
  for setup in ${1//,/ }; do
    [ -n "${MODEL_OF[$setup]:-}" ] && MODEL_ARGS+=(--model "$setup=${MODEL_OF[$setup]}")
  done
}

case "$PART" in
  prepare)
    [ "$FW_OK" = 1 ] && convert ;;
  harness)
    setups=hf-large-v3-fp16-b16
    [ "$FW_OK" = 1 ] && setups=$SETUPS_FW,$setups
    rm -rf "$WORK/results"
    gpubench run whisper --setups "$setups" "${RUN_ARGS[@]}" ${WHISPER_PRICE:+--price "$WHISPER_PRICE"} \
      --results-dir "$WORK/results" >"$OUT/harness.jsonl" 2>"$OUT/harness.err"
    echo "harness exit: $?"
    tar -czf "$OUT/harness-runs.tar.gz" -C "$WORK" results
    cp "$OUT/harness.jsonl" "$WORK/harness.jsonl"
    "$PY" - "$OUT/harness.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] in ("result", "derived"):
        m = {k: round(v["value"], 3) for k, v in r["metrics"].items()}
        print(r["kind"], r["setup"], r.get("status", ""), r.get("error") or "", m)
EOF
    ;;
  bare)
    fw_models
    harness=()
    [ -f "$WORK/harness.jsonl" ] && harness=(--harness "$WORK/harness.jsonl")
    model_args fw-turbo-fp16-b16,fw-large-v3-fp16-b16,fw-large-v3-fp16-seq,fw-large-v3-int8-b16
    for round in 1 2; do
      "$PY" benchmarks/whisper_bare.py --audio "$WORK/audio.npz" --fixed-tokens "$FIXED_TOKENS" "${BARE_ARGS[@]}" \
        "${MODEL_ARGS[@]}" "${harness[@]}" \
        2>>"$OUT/bare.err" | sed "s/^{/{\"round\": $round, /" | tee -a "$OUT/bare.jsonl"
    done ;;
  rounds)  # the harness and the bare script in turns: a host-bound pass on the H200 reads ~33.5 or ~38x realtime
    # from one pass to the next (sequential, 2026-12-04), so each round gives both the same luck; odd rounds run the
    # harness first, even ones the bare script. ROUND_SETUPS (the harness's setups; default all five) narrows both.
    fw_models
    audio_s=${ROUND_AUDIO_S:-1200}  # 600, 1200 or 1800 (convert's files)
    npz=$WORK/audio-$audio_s.npz
    [ "$audio_s" = 600 ] || [ "$CPU" = 1 ] && npz=$WORK/audio.npz  # a CPU run: the smoke's clips either way
    round_setups=${ROUND_SETUPS:-$SETUPS_FW,hf-large-v3-fp16-b16}  # the harness's; the bare script runs the fw- ones
    model_args "$round_setups"
    round_harness() {
      timeout "${ROUND_HARNESS_S:-300}" gpubench run whisper --setups "$round_setups" \
        "${RUN_ARGS[@]}" --repeats 1 --set synthetic_audio_s="$audio_s" --results-dir "$WORK/results" \
        ${WHISPER_PRICE:+--price "$WHISPER_PRICE"} \
        2>>"$OUT/harness.err" | sed "s/^{/{\"round\": $1, /" >>"$OUT/harness.jsonl"
      echo "round $1, harness: exit ${PIPESTATUS[0]}"
    }
    round_bare() {
      [ ${#MODEL_ARGS[@]} -gt 0 ] || return 0  # the transformers setup alone: no bare script for it
      timeout "${ROUND_BARE_S:-200}" "$PY" benchmarks/whisper_bare.py --audio "$npz" \
        --fixed-tokens "$FIXED_TOKENS" "${BARE_ARGS[@]}" "${MODEL_ARGS[@]}" \
        2>>"$OUT/bare.err" | sed "s/^{/{\"round\": $1, /" >>"$OUT/bare.jsonl"
      echo "round $1, bare: exit ${PIPESTATUS[0]}"
    }
    last=0  # seconds the last round took: a round that would end past ROUND_DEADLINE_S (of this script) is not begun
    for round in ${ROUNDS:-1}; do
      if [ "${ROUND_DEADLINE_S:-0}" -gt 0 ] && [ $((SECONDS + last)) -gt "$ROUND_DEADLINE_S" ]; then
        echo "round $round: not begun (${SECONDS} s gone, the last round took ${last} s)"; break
      fi
      begun=$SECONDS
      if [ $((round % 2)) = 1 ]; then round_harness "$round"; round_bare "$round"
      else round_bare "$round"; round_harness "$round"; fi
      last=$((SECONDS - begun))
    done
    tar -czf "$OUT/harness-runs.tar.gz" -C "$WORK" results
    "$PY" - "$OUT/harness.jsonl" "$OUT/bare.jsonl" <<'EOF'
import json, statistics, sys
speeds = {}  # setup -> who -> round -> x realtime
for path, who in ((sys.argv[1], "harness"), (sys.argv[2], "bare")):
    for line in open(path):
        r = json.loads(line)
        if who == "bare" or (r.get("kind") == "result" and r.get("status") == "ok"):
            x = r["realtime_factor"] if who == "bare" else r["metrics"]["realtime_factor"]["value"]
            speeds.setdefault(r["setup"], {}).setdefault(who, {})[r["round"]] = round(x, 2)
        elif r.get("kind") == "result":
            print("harness", r["setup"], r.get("status"), r.get("error"))
for setup, by in speeds.items():
    h, b = by.get("harness", {}), by.get("bare", {})
    gap = f"{100 * (statistics.median(h.values()) / statistics.median(b.values()) - 1):+.1f}%" if h and b else "-"
    # the same round's two passes had the same luck: their ratio is the check (benchmarks/results/h200-2026-12-04b)
    paired = [h[n] / b[n] - 1 for n in h if n in b]
    paired_gap = f"{100 * statistics.median(paired):+.1f}%" if paired else "-"
    print(setup, "harness", list(h.values()), "bare", list(b.values()), "median gap", gap,
          "median of the rounds' gaps", paired_gap)
EOF
    ;;
  sampler)  # the bare pass beside each part of the sampler (turbo on 1800 s: a 1.2 s pass at 600 s is too short
    # to read), then the harness on the same audio with its sampler off: what is left of the gap without it
    fw_models
    cost=("$PY" benchmarks/whisper_sampler_cost.py --fixed-tokens "$FIXED_TOKENS")
    [ "$CPU" = 1 ] && cost+=(--device cpu --cpu-threads 1 --warmup-s 1)
    model_args fw-turbo-fp16-b16
    timeout "${SAMPLER_TURBO_S:-150}" "${cost[@]}" --audio "$WORK/audio-1800.npz" --rounds 3 \
      "${MODEL_ARGS[@]}" >"$OUT/sampler-turbo.jsonl" 2>"$OUT/sampler.err"
    echo "turbo: exit $?"
    model_args fw-large-v3-fp16-seq
    timeout "${SAMPLER_SEQ_S:-200}" "${cost[@]}" --audio "$WORK/audio.npz" --rounds 2 \
      --variants none,sampler,nvml,proc "${MODEL_ARGS[@]}" >"$OUT/sampler-seq.jsonl" \
      2>>"$OUT/sampler.err"
    echo "sequential: exit $?"
    rm -rf "$WORK/results-off"
    for spec in "fw-turbo-fp16-b16 1800" "fw-large-v3-fp16-seq 600"; do
      set -- $spec
      GPUBENCH_UTILISATION=off timeout "${SAMPLER_HARNESS_S:-100}" gpubench run whisper --setups "$1" \
        "${RUN_ARGS[@]}" --set synthetic_audio_s="$2" --results-dir "$WORK/results-off" \
        >>"$OUT/harness-off.jsonl" 2>>"$OUT/harness-off.err"
      echo "harness, sampler off, $1: exit $?"
    done
    grep -h '"summary"\|nvml_call_us_idle' "$OUT"/sampler-*.jsonl
    "$PY" - "$OUT/harness-off.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "result":
        print(r["setup"], r["repeat"], r.get("status"), r.get("error") or "",
              round(r["metrics"].get("realtime_factor", {}).get("value", 0), 2))
EOF
    ;;
esac
