# Sourced at the start of a device call: `source benchmarks/gpu_python_env.sh || exit 1`.
#
# The device's python3 has torch but not every dependency gpubench needs (../shared/reference/device-notes.md).
# Wheels carried in .whl*/ (pydantic for gpubench, diffusers for sdxl, ...) are installed to /tmp/wheels, which
# goes on PYTHONPATH after what is there, in later calls of a warm machine too. The working tree's gpubench is
# installed into python3, again only when its code differs from what was installed last (/tmp survives while the
# machine stays warm). Prints one line; returns 1 when an install failed (pip's output: $OUT/gpubench-install.log).
_gpu_wheels=$(ls .whl*/*.whl 2>/dev/null)
if [ -n "$_gpu_wheels" ]; then
  # shellcheck disable=SC2086 # one word per wheel
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/wheels \
    $_gpu_wheels || return 1
fi
# what an earlier call of this machine installed stays in /tmp/wheels (carry .whl once)
if [ -d /tmp/wheels ]; then export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/wheels; fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
_gpu_code=$(find pyproject.toml setup.py gpubench workloads launcher -type f \
  \( -name '*.py' -o -name '*.csv' -o -name '*.css' -o -name '*.json' -o -name '*.toml' \) 2>/dev/null | sort \
  | xargs cat | sha256sum | cut -c1-16)
if [ "$(cat /tmp/gpubench-installed 2>/dev/null)" = "$_gpu_code" ] \
  && python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('gpubench') is None)"; then
  echo "gpu_python_env: gpubench installed${_gpu_wheels:+, carried wheels in /tmp/wheels}"
elif python3 -m pip install -q --no-deps --no-build-isolation --no-index . >/tmp/gpubench-install.log 2>&1; then
  echo "$_gpu_code" >/tmp/gpubench-installed
  echo "gpu_python_env: gpubench installed from the working tree${_gpu_wheels:+, carried wheels in /tmp/wheels}"
else
  [ -n "${OUT:-}" ] && cp /tmp/gpubench-install.log "$OUT"/ 2>/dev/null
  echo "gpu_python_env: GPUBENCH INSTALL FAILED (pip's output: gpubench-install.log in \$OUT)"
  unset _gpu_wheels _gpu_code
  return 1
fi
unset _gpu_wheels _gpu_code
