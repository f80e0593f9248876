# Stand-ins for the upstream images a machine without a container registry cannot pull; sourced by
# tools/build_images.sh, which passes them through the build args the Dockerfiles already take. docs/images.md says
# what each changes compared with the real image. Each prints its tag; a second call reuses what the first made
# (the Debian root file system is kept under $STAND_IN_CACHE for a fresh engine).
#   ghcr.io/astral-sh/uv:X      -> /uv from the uv X wheel on PyPI, on scratch
#   nvidia/cuda:*-runtime-*     -> Debian bookworm (debootstrap, docker import) with CPython 3.12 at /usr/bin/python3.12
#                                  (a copy of a local build, relocated to prefix /usr); no CUDA libraries
#   vllm/vllm-openai:vX         -> that CUDA stand-in with python3 = 3.12 and vllm X (with its torch) from PyPI,
#                                  installed system-wide as the upstream Dockerfile does
# Builds inside reach the package index only through this machine's TLS interception, so the Debian stand-in carries
# the host's CA bundle and names it in SSL_CERT_FILE, PIP_CERT and REQUESTS_CA_BUNDLE (apt reads plain http).

STAND_IN_CACHE=${STAND_IN_CACHE:-/var/tmp/gpubench-image-stand-ins}
STAND_IN_SUITE=bookworm
STAND_IN_MIRROR=http://deb.debian.org/debian
# CPython's extension modules' libraries (ssl, ctypes, sqlite3, bz2, lzma, readline, curses, uuid, dbm, expat).
STAND_IN_PACKAGES=ca-certificates,libssl3,libffi8,libsqlite3-0,libbz2-1.0,liblzma5,zlib1g,libreadline8,libncursesw6,libuuid1,libgdbm6,libexpat1
STAND_IN_CA=/usr/local/share/gpubench-stand-in/host-ca-bundle.crt
HOST_CA=${HOST_CA:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}

_stand_in_have() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

# A CPython 3.12 build on this machine: $STAND_IN_PYTHON, else pyenv's newest 3.12, else python3.12 on PATH.
_stand_in_python() {
  local found=${STAND_IN_PYTHON:-}
  if [[ -z $found ]]; then
    found=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12.*/bin/python3.12 2>/dev/null \
      | sort -V | tail -n1)
  fi
  [[ -n $found ]] || found=$(command -v python3.12 || true)
  if [[ -z $found ]]; then
    say "no CPython 3.12 on this machine for the stand-in base (set STAND_IN_PYTHON)"
    return 1
  fi
  echo "$found"
}

stand_in_uv() {
  local version=${1##*:} tag work
  tag="gpubench-stand-in/uv:$version"
  if ! _stand_in_have "$tag"; then
    work=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
      --python-version 3.12 "uv==$version" -d "$work" >&2 || { rm -rf "$work"; return 1; }
    python3 - "$work" <<'EOF' || { rm -rf "$work"; return 1; }
import os, sys, zipfile
from pathlib import Path
work = Path(sys.argv[1])
with zipfile.ZipFile(next(work.glob("uv-*.whl"))) as wheel:
    for member in wheel.namelist():
        if member.endswith(("/scripts/uv", "/scripts/uvx")):
            (work / Path(member).name).write_bytes(wheel.read(member))
            os.chmod(work / Path(member).name, 0o755)
EOF
    printf 'FROM scratch\nCOPY uv uvx /\n' > "$work/Dockerfile"
    "$DOCKER" build -q -t "$tag" "$work" >&2 || { rm -rf "$work"; return 1; }
    rm -rf "$work"
  fi
  echo "$tag"
}

stand_in_cuda() {
  local python prefix key tag tarball root
  python=$(_stand_in_python) || return 1
  prefix=$("$python" -c 'import sys; print(sys.prefix)')
  key=$( { echo "$STAND_IN_SUITE $STAND_IN_PACKAGES"; "$python" -VV; sha256sum "$HOST_CA";
           declare -f stand_in_cuda _stand_in_rootfs; } | sha256sum | cut -c1-12)
  tag="gpubench-stand-in/cuda:$key"
  _stand_in_have "$tag" && { echo "$tag"; return 0; }
  tarball="$STAND_IN_CACHE/cuda-$key.rootfs.tar"
  if [[ ! -f $tarball ]]; then
    _stand_in_rootfs "$python" "$prefix" "$tarball" || return 1
  fi
  say "docker import $tarball $tag"
  "$DOCKER" import \
    --change 'ENV PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64' \
    --change 'ENV NVIDIA_VISIBLE_DEVICES=all' \
    --change 'ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility' \
    --change 'ENV CUDA_VERSION=12.8.1' \
    --change "ENV SSL_CERT_FILE=$STAND_IN_CA" \
    --change "ENV PIP_CERT=$STAND_IN_CA" \
    --change "ENV REQUESTS_CA_BUNDLE=$STAND_IN_CA" \
    --change 'CMD ["/bin/bash"]' \
    "$tarball" "$tag" >&2 || return 1
  echo "$tag"
}

_stand_in_rootfs() {  # PYTHON PREFIX TARBALL
  local python=$1 prefix=$2 tarball=$3 work root started
  command -v debootstrap >/dev/null || { say "debootstrap is not installed (apt-get install debootstrap)"; return 1; }
  mkdir -p "$STAND_IN_CACHE"
  work=$(mktemp -d "$STAND_IN_CACHE/work.XXXXXX")
  root="$work/rootfs"
  started=$(date +%s)
  say "debootstrap $STAND_IN_SUITE into $root"
  if ! debootstrap --variant=minbase "--include=$STAND_IN_PACKAGES" "$STAND_IN_SUITE" "$root" "$STAND_IN_MIRROR" \
      > "$work/debootstrap.log" 2>&1; then
    say "debootstrap failed: $(tail -n3 "$work/debootstrap.log")"
    rm -rf "$work"
    return 1
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
  # apt as the official Debian and Ubuntu images set it: no package caches kept, no translations fetched.
  cat > "$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' > "$root/etc/apt/apt.conf.d/docker-no-languages"
  # and dpkg as Ubuntu's minimized images set it: no manuals or documentation (copyrights kept).
  printf '%s\n' 'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/groff/*' 'path-exclude=/usr/share/info/*' \
    'path-exclude=/usr/share/lintian/*' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
    > "$root/etc/dpkg/dpkg.cfg.d/excludes"
  # CPython 3.12 with prefix /usr, where Ubuntu's python3.12 lives: the interpreter finds its library from its own
  # path; the build-time paths in sysconfig (used by torch.compile's C++ builds) are rewritten.
  install -m 755 "$prefix/bin/python3.12" "$root/usr/bin/python3.12"
  if [[ -f $prefix/lib/libpython3.12.so.1.0 ]]; then
    install -m 755 "$prefix/lib/libpython3.12.so.1.0" "$root/usr/lib/x86_64-linux-gnu/"
    ln -s libpython3.12.so.1.0 "$root/usr/lib/x86_64-linux-gnu/libpython3.12.so"
  fi
  tar -C "$prefix/lib" --exclude=python3.12/test --exclude='python3.12/site-packages/*' \
    --exclude=python3.12/idlelib --exclude=python3.12/tkinter -cf - python3.12 | tar -C "$root/usr/lib" -xf -
  cp -a "$prefix/include/python3.12" "$root/usr/include/"
  grep -rlF "$prefix" "$root/usr/lib/python3.12" --include='_sysconfigdata*.py' --include=Makefile \
    --include='python-config.py' | xargs -r sed -i "s#$prefix#/usr#g"
  find "$root/usr/lib/python3.12" -name '_sysconfigdata*.pyc' -path '*__pycache__*' -delete
  mkdir -p "$root$(dirname "$STAND_IN_CA")"
  cp "$HOST_CA" "$root$STAND_IN_CA"
  if ! chroot "$root" /usr/bin/python3.12 -c 'import ssl, ctypes, sqlite3, bz2, lzma, zlib, sys; assert sys.prefix == "/usr", sys.prefix'; then
    say "the copied python3.12 does not start in the stand-in root"
    rm -rf "$work"
    return 1
  fi
  tar -C "$root" --numeric-owner -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  rm -rf "$work"
  say "stand-in root file system in $(( $(date +%s) - started ))s: $tarball"
}

# What vllm/vllm-openai ships, as tools/lock_images.py resolves it: its requirements and the day it was built.
_stand_in_vllm_ships() {  # TAG -> "requirement... date"
  python3 - "$1" "$REPO/tools/lock_images.py" <<'EOF'
import ast, sys
tree = ast.parse(open(sys.argv[2]).read())
ships = next(ast.literal_eval(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "VLLM_IMAGE_SHIPS")
requirements, date = ships[sys.argv[1]]
print(" ".join(requirements), date)
EOF
}

stand_in_vllm() {
  local version=${1##*:v} ships cuda uv tag
  ships=$(_stand_in_vllm_ships "v$version") || return 1
  cuda=$(stand_in_cuda) || return 1
  uv=$(stand_in_uv ":$(sed -n 's/^ARG UV_IMAGE=.*://p' "$REPO/images/_layers/vllm-base/Dockerfile")") || return 1
  tag="gpubench-stand-in/vllm-openai:v$version-$(echo "$cuda $ships" | sha256sum | cut -c1-12)"
  _stand_in_have "$tag" && { echo "$tag"; return 0; }
  say "building $tag: ${ships% *} from PyPI as of ${ships##* } on $cuda"
  "$DOCKER" build -t "$tag" --build-arg "CUDA=$cuda" --build-arg "UV=$uv" --build-arg "SHIPS=${ships% *}" \
    --build-arg "BUILT=${ships##* }" - >&2 <<'EOF' || return 1
ARG CUDA
ARG UV
FROM ${UV} AS uv
FROM ${CUDA}
ARG SHIPS
ARG BUILT
# As vllm/vllm-openai: python3 is 3.12; vllm and what it needs (torch from PyPI) installed system-wide, resolved as
# on the day the image was built.
RUN --mount=from=uv,source=/uv,target=/usr/local/bin/uv \
    ln -sf python3.12 /usr/bin/python3 \
    && UV_NO_CACHE=1 uv pip install --system --break-system-packages --python /usr/bin/python3.12 \
       --exclude-newer "${BUILT}" ${SHIPS} \
    && python3 -c "import vllm; print(vllm.__version__)"
ENTRYPOINT ["vllm", "serve"]
EOF
  echo "$tag"
}
