# Builds a workload's image together with the stack under it, in one buildx run. The catalog says which stack and
# which Dockerfile (its own images/<name>/Dockerfile, else the template images/_layers/workload/Dockerfile):
#   env WORKLOAD=sdxl $(python -m gpubench.images bake-env sdxl) docker buildx bake -f images/_layers/docker-bake.hcl workload --load
#   env WORKLOAD=sdxl WEIGHTS=bake $(python -m gpubench.images bake-env sdxl) docker buildx bake -f images/_layers/docker-bake.hcl workload --load
# The stack (STACK: base for Dockerfile.base, vllm-base for images/_layers/vllm-base) is a named context of the
# workload build, so nothing has to be pushed first and no workload waits for the other stack. CI
# (.github/workflows/images.yml) sets the rest.

variable "WORKLOAD" {
  default = "first-matmul"
}
variable "REGISTRY" {
  default = "ghcr.io/gpubench"
}
variable "VERSION" {
  default = "0.1.0"
}
variable "GIT_COMMIT" {
  default = ""
}
variable "WEIGHTS" {
  default = "none"
}
# The workload's stack and Dockerfile: `python -m gpubench.images bake-env WORKLOAD` prints both from the catalog.
variable "STACK" {
  default = "base"
}
variable "DOCKERFILE" {
  default = "images/_layers/workload/Dockerfile"
}

# CI replaces this with docker/metadata-action's tags and labels.
target "docker-metadata-action" {
  tags = ["${REGISTRY}/${WORKLOAD}:${VERSION}"]
}

# The torch stack: CUDA 12.8 (base flavour), torch 2.8.0 from PyPI with its CUDA libraries.
target "base" {
  context    = "."
  dockerfile = "Dockerfile.base"
  tags       = ["${REGISTRY}/base:${VERSION}"]
}

# The vLLM stack: vllm/vllm-openai with vllm 0.11.0.
target "vllm-base" {
  context    = "."
  dockerfile = "images/_layers/vllm-base/Dockerfile"
  tags       = ["${REGISTRY}/vllm-base:${VERSION}"]
}

target "workload" {
  inherits   = ["docker-metadata-action"]
  context    = "."
  dockerfile = DOCKERFILE
  contexts = {
    gpubench-stack = "target:${STACK}"
  }
  args = {
    WORKLOAD               = WORKLOAD
    STACK_IMAGE            = "gpubench-stack"
    BASE_IMAGE             = "gpubench-stack"
    VLLM_BASE_IMAGE        = "gpubench-stack"
    WEIGHTS                = WEIGHTS
    GPUBENCH_IMAGE         = "${REGISTRY}/${WORKLOAD}"
    GPUBENCH_IMAGE_VERSION = VERSION
    GPUBENCH_GIT_COMMIT    = GIT_COMMIT
  }
}
