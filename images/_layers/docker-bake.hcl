# Builds a workload's image together with the stack under it, in one buildx run (WORKLOAD picks the folder):
#   WORKLOAD=sdxl docker buildx bake -f images/_layers/docker-bake.hcl workload --load
#   WORKLOAD=sdxl WEIGHTS=bake docker buildx bake -f images/_layers/docker-bake.hcl workload --load
# The base stack (Dockerfile.base) is a named context of the workload build, so nothing has to be pushed
# first; an image on vllm/vllm-openai never asks for it. CI (.github/workflows/images.yml) sets the rest.

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

target "base" {
  context    = "."
  dockerfile = "Dockerfile.base"
  tags       = ["${REGISTRY}/base:${VERSION}"]
}

target "workload" {
  inherits   = ["docker-metadata-action"]
  context    = "."
  dockerfile = "images/${WORKLOAD}/Dockerfile"
  contexts = {
    gpubench-base = "target:base"
  }
  args = {
    BASE_IMAGE             = "gpubench-base"
    WEIGHTS                = WEIGHTS
    GPUBENCH_IMAGE         = "${REGISTRY}/${WORKLOAD}"
    GPUBENCH_IMAGE_VERSION = VERSION
    GPUBENCH_GIT_COMMIT    = GIT_COMMIT
  }
}
