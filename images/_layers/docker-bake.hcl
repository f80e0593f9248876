# Builds a workload's image together with the stack under it, in one buildx run (WORKLOAD picks the folder):
#   WORKLOAD=sdxl docker buildx bake -f images/_layers/docker-bake.hcl workload --load
#   WORKLOAD=sdxl WEIGHTS=bake docker buildx bake -f images/_layers/docker-bake.hcl workload --load
# The stack a workload builds on (stack() below: base for Dockerfile.base, vllm-base for images/_layers/vllm-base)
# is a named context of the workload build, so nothing has to be pushed first and no workload waits for the other
# stack. CI (.github/workflows/images.yml) sets the rest.

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

# CI replaces this with docker/metadata-action's tags and labels.
target "docker-metadata-action" {
  tags = ["${REGISTRY}/${WORKLOAD}:${VERSION}"]
}

# The workloads whose Dockerfile starts FROM ${VLLM_BASE_IMAGE}; every other one starts FROM ${BASE_IMAGE}
# (tests/test_images_tree.py holds this list to the Dockerfiles).
function "stack" {
  params = [workload]
  result = contains(["ollama-vs-vllm", "vllm-fp8", "vllm-prefix-cache", "vllm-serving"], workload) ? "vllm-base" : "base"
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
  dockerfile = "images/${WORKLOAD}/Dockerfile"
  contexts = {
    gpubench-stack = "target:${stack(WORKLOAD)}"
  }
  args = {
    BASE_IMAGE             = "gpubench-stack"
    VLLM_BASE_IMAGE        = "gpubench-stack"
    WEIGHTS                = WEIGHTS
    GPUBENCH_IMAGE         = "${REGISTRY}/${WORKLOAD}"
    GPUBENCH_IMAGE_VERSION = VERSION
    GPUBENCH_GIT_COMMIT    = GIT_COMMIT
  }
}
