#!/usr/bin/env bash
# Builds llama.cpp's llama-server, llama-quantize and llama-bench from the llama.cpp source that PyPI's
# llama-cpp-python sdist vendors (vendor/llama.cpp), and installs them with llama.cpp's GGUF converter
# (convert_hf_to_gguf.py, its conversion/ package and gguf-py) into .llama-cpp/, where `gpubench run` finds them
# with nothing to set (gpubench/servers/llamacpp.py). Why llama-server and not llama-cpp-python's own server:
# docs/architecture.md, "Engines".
#
#   bash tools/llamacpp_build.sh                 # CPU build for this machine (-march=native) into .llama-cpp/
#   bash tools/llamacpp_build.sh --cuda 90       # CUDA build for sm_90 (an H200), portable CPU code
#   bash tools/llamacpp_build.sh --portable --prefix /opt/llama.cpp    # an image's CPU-portable build
#   bash tools/llamacpp_build.sh --source llama.cpp-src.tar.xz ...     # from tools/llamacpp_pieces.py's trimmed
#                                                                      # source instead of PyPI
#   bash tools/llamacpp_build.sh --targets llama-quantize --prefix DIR   # only the quantizer (a CPU build)
#   bash tools/llamacpp_build.sh --work DIR ...  # build in DIR, kept until the build succeeds: the same command
#                                                # again resumes a build that was killed (ninja's own record)
#
# Idempotent: a prefix whose build-info.json has this build's key and whose llama-server answers --version is kept.
# Each build is cached by its key (source version, cmake flags, compiler, and this machine's CPU flags for a native
# build) under ${XDG_CACHE_HOME:-~/.cache}/gpubench/llama.cpp/<key>/, so a fresh clone on the same machine copies it
# instead of compiling again. The prefix holds bin/ (the three programs and ggml's shared libraries, rpath $ORIGIN),
# convert/ and build-info.json (version, commit, flags, compiler, CUDA, build time).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

PACKAGE=llama-cpp-python
VERSION=${GPUBENCH_LLAMA_CPP_PYTHON:-0.3.36}  # gpubench/servers/llamacpp.py SOURCE_VERSION; a test keeps them equal
DEFAULT_TARGETS="llama-server llama-quantize llama-bench"
FORMAT=1  # part of the cache key: bump when what this script installs changes

cuda=""
portable=0
prefix="$repo/.llama-cpp"
source_arg=""
jobs=$(nproc)
targets=$DEFAULT_TARGETS
work_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=${2:?--cuda takes the CUDA architectures, e.g. 90}; shift 2 ;;
    --portable) portable=1; shift ;;
    --prefix) prefix=${2:?--prefix takes a folder}; shift 2 ;;
    --source) source_arg=${2:?--source takes a trimmed source tarball or a llama.cpp folder}; shift 2 ;;
    --jobs) jobs=${2:?--jobs takes a number}; shift 2 ;;
    --targets) targets=${2:?--targets takes CMake targets, e.g. llama-quantize}; shift 2 ;;
    --work) work_arg=${2:?--work takes a folder}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "llamacpp_build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
refuse() { echo "llamacpp_build.sh: $*" >&2; exit 2; }
case "$jobs" in ''|*[!0-9]*|0) refuse "--jobs $jobs: give a whole number, 1 or more" ;; esac
case "$cuda" in *[!0-9\;]*) refuse "--cuda $cuda: give architectures like 90 or '80;90'" ;; esac
[ -z "$source_arg" ] || [ -e "$source_arg" ] || refuse "--source $source_arg does not exist"
read -r -a TARGETS <<<"$targets"
for target in "${TARGETS[@]}"; do
  case " $DEFAULT_TARGETS " in *" $target "*) ;; *) refuse "--targets $target: one of $DEFAULT_TARGETS" ;; esac
done
[ ${#TARGETS[@]} -gt 0 ] || refuse "--targets '': name at least one of $DEFAULT_TARGETS"
# the program that says whether the build runs here: llama-server --version, else the first target's usage
check=${TARGETS[0]}
case " ${TARGETS[*]} " in *" llama-server "*) check=llama-server ;; esac
for tool in cmake c++ python3; do
  command -v "$tool" >/dev/null || refuse "$tool is not installed (apt-get install cmake g++ python3)"
done
[ -z "$cuda" ] || command -v nvcc >/dev/null || refuse "--cuda needs nvcc on PATH (e.g. PATH=/usr/local/cuda/bin:\$PATH)"

flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON
       -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
       -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_CCACHE=OFF)
# No web UI (it would be downloaded from the Hugging Face Hub at build time) and no HTTPS client: the benchmark
# serves the OpenAI API on localhost and loads local GGUF files.
cpu="native"
if [ -n "$cuda" ]; then
  flags+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cuda" -DGGML_NATIVE=OFF)
  cpu="portable"
elif [ "$portable" = 1 ]; then
  flags+=(-DGGML_NATIVE=OFF)
  cpu="portable"
elif [ "$(uname -m)" = x86_64 ]; then
  # This machine's CPU, less AMX: a CPU can list AMX and still trap on it (the development VM's Xeon does: SIGILL at
  # the first tilezero in ggml's AMX matmul, though arch_prctl grants the tile state). gcc and clang let an explicit
  # -mno-* win over what -march=native implies, wherever it stands.
  flags+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
          "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
  cpu="native, no AMX"
fi
compiler=$(c++ --version | head -n1)
nvcc_version=""
[ -n "$cuda" ] && nvcc_version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n1)
cpu_flags=""
[ "$cpu" = native ] && cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
source_id="$PACKAGE==$VERSION"
[ -n "$source_arg" ] && source_id="$source_id from $(basename "$source_arg")"
targets_id=""  # the default three leave the key as it was before --targets
[ "${TARGETS[*]}" = "$DEFAULT_TARGETS" ] || targets_id="targets ${TARGETS[*]}"
key=$(printf '%s\n' "$FORMAT" "$PACKAGE==$VERSION" "${flags[*]}" "$compiler" "$nvcc_version" "$cpu_flags" \
      $targets_id | sha256sum | cut -c1-16)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/gpubench/llama.cpp
cached="$cache_root/$key"

runs() {  # the build in $1 starts here: its libraries found, its CPU code runs (llama-quantize's usage exits 1)
  if [ "$check" = llama-server ]; then
    "$1/bin/llama-server" --version >/dev/null 2>&1
  else
    "$1/bin/$check" --help >/dev/null 2>&1
    [ $? -lt 126 ]
  fi
}

ready() {  # a complete install of this key in $1
  [ -x "$1/bin/$check" ] && [ -f "$1/build-info.json" ] \
    && grep -q "\"key\": \"$key\"" "$1/build-info.json" && runs "$1"
}

install_to_prefix() {
  if [ "$(cd "$cached" && pwd -P)" != "$(mkdir -p "$prefix" && cd "$prefix" && pwd -P)" ]; then
    rm -rf "$prefix.tmp.$$" && cp -a "$cached" "$prefix.tmp.$$"
    rm -rf "$prefix" && mv "$prefix.tmp.$$" "$prefix"
  fi
  say_ready
}
say_ready() { echo "llama.cpp ready in $prefix (${targets_id:+${TARGETS[*]}, }build $key)"; }

if ready "$prefix"; then
  say_ready
  exit 0
fi
if ready "$cached"; then
  install_to_prefix
  exit 0
fi

mkdir -p "$cache_root"
if [ -n "$work_arg" ]; then  # kept until the build succeeds: a second run resumes it
  work=$work_arg
  mkdir -p "$work"
  if [ -f "$work/key" ] && [ "$(cat "$work/key")" != "$key" ]; then
    rm -rf "$work" && mkdir -p "$work"  # another build's folder: start again
  fi
  echo "$key" >"$work/key"
else
  work=$(mktemp -d "$cache_root/build-$key.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
src="$work/llama.cpp"
sdist_sha256=""
commit=""
if [ -f "$work/unpacked" ]; then  # a resumed build: the same files, their times kept, so ninja redoes nothing done
  commit=$(cat "$work/commit")
  sdist_sha256=$(cat "$work/sdist_sha256")
elif [ -z "$source_arg" ]; then
  # PyPI's sdist (pip's cache keeps it): llama.cpp's tree without its 60 MB of vocabulary GGUFs and the .git pack,
  # but with the submodule's HEAD, which names the llama.cpp commit.
  python3 -m pip download -q --no-deps --no-binary :all: -d "$cache_root/sdist" "$PACKAGE==$VERSION"
  sdist="$cache_root/sdist/llama_cpp_python-$VERSION.tar.gz"
  sdist_sha256=$(sha256sum "$sdist" | cut -d' ' -f1)
  top="llama_cpp_python-$VERSION"
  tar -xzf "$sdist" -C "$work" --exclude="$top/vendor/llama.cpp/models/*.gguf*" \
      "$top/vendor/llama.cpp" "$top/.git/modules/vendor/llama.cpp/HEAD"
  commit=$(cat "$work/$top/.git/modules/vendor/llama.cpp/HEAD")
  mv "$work/$top/vendor/llama.cpp" "$src"
elif [ -d "$source_arg" ]; then
  cp -a "$source_arg" "$src"
else  # python3's tarfile: the H200 machine has no xz or zstd program
  python3 - "$source_arg" "$work/unpacked" <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    tar.extractall(sys.argv[2], filter="data")
EOF
  mv "$work/unpacked/"* "$src"
fi
if [ -f "$src/GPUBENCH-SOURCE.json" ]; then  # tools/llamacpp_pieces.py's trimmed source says where it came from
  commit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"])' "$src/GPUBENCH-SOURCE.json")
  sdist_sha256=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sdist_sha256"])' \
                 "$src/GPUBENCH-SOURCE.json")
fi
echo "$commit" >"$work/commit" && echo "$sdist_sha256" >"$work/sdist_sha256" && touch "$work/unpacked"
version_of() {  # set(NAME_VERSION_MAJOR 0) ... in a CMakeLists.txt -> 0.5.0
  sed -n "s/^set($2_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\))/\2/p" "$1" | paste -sd.
}
llama_version=$(version_of "$src/CMakeLists.txt" LLAMA)
ggml_version=$(version_of "$src/ggml/CMakeLists.txt" GGML)
# Named here, so that a git repository around the build folder is never taken for llama.cpp's own.
[ -n "$commit" ] && flags+=("-DLLAMA_BUILD_COMMIT=${commit:0:7}" -DLLAMA_BUILD_NUMBER=0)

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
echo "building llama.cpp $llama_version (${commit:0:7}) from $source_id: ${TARGETS[*]}, $jobs jobs, build $key"
done_before=0  # steps a killed build of this folder finished (ninja's log: one line a step after its header)
[ -f "$work/build/.ninja_log" ] && done_before=$(($(wc -l <"$work/build/.ninja_log") - 1))
[ "$done_before" -gt 0 ] && echo "resuming the build in $work: $done_before steps were done before"
TIMEFORMAT='%R %U %S'
exec 3>&2  # the build's own errors, past the time report's redirection
{ time { cmake -S "$src" -B "$work/build" "${generator[@]}" "${flags[@]}" >"$work/cmake.log" 2>&1 \
         || { tail -n 30 "$work/cmake.log" >&3; exit 1; }
       cmake --build "$work/build" -j "$jobs" --target "${TARGETS[@]}" >"$work/build.log" 2>&1 \
         || { grep -m5 -B2 -A8 'error' "$work/build.log" >&3 || tail -n 40 "$work/build.log" >&3; exit 1; }
     } ; } 2>"$work/time"
read -r wall user sys <"$work/time"

staged="$work/install"
mkdir -p "$staged/bin" "$staged/convert"
cp -a "$work/build/bin/." "$staged/bin/"
cp -a "$src/convert_hf_to_gguf.py" "$src/conversion" "$staged/convert/"
mkdir -p "$staged/convert/gguf-py" && cp -a "$src/gguf-py/gguf" "$staged/convert/gguf-py/"
cp "$src/LICENSE" "$staged/LICENSE"
printf '%s\n' "${flags[@]}" >"$work/flags"
python3 - "$staged/build-info.json" "$work/flags" <<EOF
import json, sys
info = {
    "engine": "llama.cpp", "version": "$llama_version", "ggml_version": "$ggml_version",
    "commit": "$commit" or None, "source": "PyPI $PACKAGE==$VERSION (sdist), vendor/llama.cpp",
    "source_sha256": "$sdist_sha256" or None, "source_file": "$(basename "${source_arg:-pypi}")",
    "targets": "${TARGETS[*]}".split(), "cmake_flags": open(sys.argv[2]).read().splitlines(),
    "compiler": "$compiler", "cuda": {"architectures": "$cuda", "nvcc": "$nvcc_version"} if "$cuda" else None,
    "cpu": "$cpu", "jobs": $jobs, "build_wall_s": $wall, "build_cpu_s": round($user + $sys, 1),
    "steps_done_before": $done_before,  # a resumed build (--work): its seconds are the rest's only
    "built_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "key": "$key",
}
json.dump(info, open(sys.argv[1], "w"), indent=2)
EOF
runs "$staged" || {
  echo "the built $check does not run:" >&2; "$staged/bin/$check" --version >&2 || true; exit 1; }
rm -rf "$cached" && mv "$staged" "$cached"
[ -z "$work_arg" ] || rm -rf "$work"
echo "built in ${wall} s (${user} s user + ${sys} s system CPU)"
install_to_prefix
