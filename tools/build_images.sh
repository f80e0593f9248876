#!/usr/bin/env bash
# Builds the project's images on the local Docker engine from its own Dockerfiles: the stacks (base: Dockerfile.base,
# vllm-base: images/_layers/vllm-base/Dockerfile) and the workloads on them (the catalog's, each on the stack and from
# the Dockerfile `python -m gpubench.images plan` names: its own images/<name>/Dockerfile or the template).
#   bash tools/build_images.sh                  # every image
#   bash tools/build_images.sh train-compile    # that workload and the stack under it
#   bash tools/build_images.sh base vllm-base   # the stacks alone
# Tags and build args are those of images/_layers/docker-bake.hcl: <REGISTRY>/<name>:<VERSION>, WORKLOAD, the stack as
# STACK_IMAGE, BASE_IMAGE and VLLM_BASE_IMAGE, WEIGHTS, GPUBENCH_IMAGE*.
# Upstream images the engine has not got and cannot pull are replaced by stand-ins that tools/image_stand_ins.sh
# makes here (docs/images.md says what they change); everything else builds exactly as on CI.
# Environment: REGISTRY (ghcr.io/gpubench), VERSION (gpubench/__init__.py), WEIGHTS (none), GPUBENCH_BUILD_LOG
# (a file the per-image build times are appended to), PYTHON (python3: reads the catalog, needs nothing installed).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
REGISTRY=${REGISTRY:-ghcr.io/gpubench}
VERSION=${VERSION:-$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' gpubench/__init__.py)}
WEIGHTS=${WEIGHTS:-none}
STACKS=(base vllm-base)
declare -A STACK_OF=() DOCKERFILE_OF=()
WORKLOADS=()
plan=$(PYTHONPATH="$REPO" "${PYTHON:-python3}" -m gpubench.images plan) || {
  echo "build_images.sh: cannot read the catalog (python -m gpubench.images plan failed)" >&2
  exit 2
}
while read -r name stack dockerfile; do
  WORKLOADS+=("$name")
  STACK_OF[$name]=$stack
  DOCKERFILE_OF[$name]=$dockerfile
done <<< "$plan"

say() { printf '[build-images] %s\n' "$*" >&2; }

dockerfile_of() {
  case $1 in
    base) echo Dockerfile.base ;;
    vllm-base) echo images/_layers/vllm-base/Dockerfile ;;
    *) echo "${DOCKERFILE_OF[$1]}" ;;
  esac
}

stack_of() { echo "${STACK_OF[$1]}"; }

# An ARG's default in a Dockerfile (the upstream image it names).
arg_default() { sed -n "s/^ARG $2=//p" "$1" | head -n1; }

valid=" ${STACKS[*]} ${WORKLOADS[*]} "
for name in "$@"; do
  if [[ $valid != *" $name "* ]]; then
    echo "build_images.sh: unknown image '$name'; valid: ${STACKS[*]} ${WORKLOADS[*]}" >&2
    exit 2
  fi
done
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=("${STACKS[@]}" "${WORKLOADS[@]}")

# A docker client that builds with BuildKit (RUN --mount, unused stages skipped): buildx where it is installed,
# else a client of Docker 20.10 to 22.x, which has BuildKit built in (Debian's /usr/bin/docker).
DOCKER=
for candidate in docker /usr/bin/docker; do
  command -v "$candidate" >/dev/null || continue
  if "$candidate" buildx version >/dev/null 2>&1; then DOCKER=$candidate; break; fi
  major=$("$candidate" version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1) || true
  if [[ $major =~ ^[0-9]+$ && $major -ge 20 && $major -lt 23 ]]; then DOCKER=$candidate; break; fi
done
if [[ -z $DOCKER ]]; then
  echo "build_images.sh: no docker client with BuildKit (install docker buildx)" >&2
  exit 2
fi
export DOCKER_BUILDKIT=1
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "build_images.sh: no Docker engine answers ($DOCKER info failed)" >&2
  exit 2
fi

# Upstream images: the engine's own copy, a pull, or a stand-in made here (only the CUDA base, uv and vLLM images).
# shellcheck source=tools/image_stand_ins.sh
source "$REPO/tools/image_stand_ins.sh"
upstream() {  # upstream REF KIND -> prints the image to build from; fails where there is none
  local ref=$1 kind=$2
  if "$DOCKER" image inspect "$ref" >/dev/null 2>&1 || "$DOCKER" pull -q "$ref" >/dev/null 2>&1; then
    echo "$ref"
  elif declare -F "stand_in_$kind" >/dev/null; then
    say "cannot pull $ref: making a stand-in"
    "stand_in_$kind" "$ref"
  else
    say "cannot pull $ref, and no stand-in replaces it"
    return 1
  fi
}

tag_of() { echo "$REGISTRY/$1:$VERSION"; }
git_commit=$(git rev-parse HEAD 2>/dev/null || true)

build() {  # build NAME ARGS... : one docker build, timed
  local name=$1 started elapsed
  shift
  say "building $(tag_of "$name")"
  started=$(date +%s)
  "$DOCKER" build -f "$(dockerfile_of "$name")" -t "$(tag_of "$name")" "$@" . || return 1
  elapsed=$(( $(date +%s) - started ))
  say "built $(tag_of "$name") in ${elapsed}s"
  if [[ -n ${GPUBENCH_BUILD_LOG:-} ]]; then echo "$name $elapsed" >> "$GPUBENCH_BUILD_LOG"; fi
}

# The stacks the wanted images need, and the upstream images under them, resolved before anything builds.
declare -A need=()
for name in "${wanted[@]}"; do
  if [[ " ${STACKS[*]} " == *" $name "* ]]; then need[$name]=1; else need[$(stack_of "$name")]=1; fi
done
uv=$(upstream "$(arg_default Dockerfile.base UV_IMAGE)" uv)
[[ -z ${need[base]:-} ]] || cuda=$(upstream "$(arg_default Dockerfile.base CUDA_IMAGE)" cuda)
[[ -z ${need[vllm-base]:-} ]] || vllm=$(upstream "$(arg_default "$(dockerfile_of vllm-base)" VLLM_IMAGE)" vllm)

declare -A built=()
failed=()
build_stack() {
  local stack=$1
  if [[ -z ${built[$stack]:-} ]]; then
    if [[ $stack == base ]]; then
      build base --build-arg "UV_IMAGE=$uv" --build-arg "CUDA_IMAGE=$cuda" && built[$stack]=ok || built[$stack]=failed
    else
      build vllm-base --build-arg "UV_IMAGE=$uv" --build-arg "VLLM_IMAGE=$vllm" && built[$stack]=ok \
        || built[$stack]=failed
    fi
    [[ ${built[$stack]} == ok ]] || failed+=("$stack")
  fi
  [[ ${built[$stack]} == ok ]]
}

for name in "${wanted[@]}"; do
  if [[ " ${STACKS[*]} " == *" $name "* ]]; then
    build_stack "$name" || true
    continue
  fi
  build_stack "$(stack_of "$name")" || { failed+=("$name (its stack failed)"); continue; }
  extra=()
  ollama=$(arg_default "$(dockerfile_of "$name")" OLLAMA_IMAGE)
  if [[ -n $ollama ]]; then
    if ollama_image=$(upstream "$ollama" ollama); then
      extra+=(--build-arg "OLLAMA_IMAGE=$ollama_image")
    else
      failed+=("$name (needs $ollama)")
      continue
    fi
  fi
  build "$name" --build-arg "WORKLOAD=$name" --build-arg "STACK_IMAGE=$(tag_of "$(stack_of "$name")")" \
    --build-arg "BASE_IMAGE=$(tag_of base)" --build-arg "VLLM_BASE_IMAGE=$(tag_of vllm-base)" \
    --build-arg "WEIGHTS=$WEIGHTS" --build-arg "GPUBENCH_IMAGE=$REGISTRY/$name" \
    --build-arg "GPUBENCH_IMAGE_VERSION=$VERSION" --build-arg "GPUBENCH_GIT_COMMIT=$git_commit" "${extra[@]}" \
    || failed+=("$name")
done

if [[ ${#failed[@]} -gt 0 ]]; then
  say "failed: ${failed[*]}"
  exit 1
fi
say "done: ${wanted[*]}"
