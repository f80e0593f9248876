"""The real images/: one pinned, locked image per registered workload, as the catalog declares; the workloads that only
add a lock to their stack build from one template, on the stack the catalog puts them on."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from repo_tools import load

from gpubench import __version__
from gpubench.catalog import WORKLOADS
from gpubench.images import (
    BAKED_WEIGHTS,
    BASE,
    HF_HOME,
    REPO,
    STACKS,
    TEMPLATE,
    VLLM_BASE,
    dockerfile_instructions,
    dockerfile_of,
    image_ref,
    image_refs,
    image_rows,
    locked_versions,
    parse_requirements,
    stack_for,
    stack_of,
)

checks = load("image_checks")
check_dockerfile, check_lock, check_registry = checks.check_dockerfile, checks.check_lock, checks.check_registry
check_workload_image = checks.check_workload_image

SPECS = list(WORKLOADS)
OWN = [s for s in SPECS if dockerfile_of(s) != REPO / TEMPLATE]  # the workloads with a Dockerfile of their own
DOCKERFILES = [*(REPO / s.dockerfile for s in STACKS), REPO / TEMPLATE, *(dockerfile_of(s) for s in OWN)]
VLLM = [s for s in SPECS if "vllm" in s.dependencies]


def final_stage(path):
    """The instructions after the last FROM."""
    instructions = dockerfile_instructions(path)
    last = max(i for i, (_, keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last + 1:]


def test_every_registered_workload_has_an_image_and_every_image_a_workload():
    assert [str(f) for f in check_registry(WORKLOADS.names())] == []


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_workload_image_is_pinned_locked_and_matches_the_catalog(spec):
    assert [str(f) for f in check_workload_image(spec)] == []


@pytest.mark.parametrize("stack", STACKS, ids=lambda s: s.name)
def test_stack_is_pinned_and_locked_and_installs_its_lock(stack):
    assert [str(f) for f in check_dockerfile(REPO / stack.dockerfile)] == []
    lock = REPO / stack.lock
    assert [str(f) for f in check_lock(lock, REPO / stack.requirements_in)] == []
    assert stack.lock in (REPO / stack.dockerfile).read_text()


def test_torch_stack_locks_torch_2_8_0():
    assert locked_versions(REPO / BASE.lock)["torch"] == "2.8.0"


def test_vllm_stack_is_vllm_0_11_0_with_uv_a_vllm_assertion_and_transformers_4_57_6():
    path = REPO / VLLM_BASE.dockerfile
    text = path.read_text()
    refs = {r.repository: r.tag for r in image_refs(path)}
    assert refs["vllm/vllm-openai"] == "v0.11.0" and refs["ghcr.io/astral-sh/uv"]
    assert "assert v('vllm') == '0.11.0'" in text
    assert re.search(r"^ARG VLLM_IMAGE=", text, re.M) and re.search(r"^ARG UV_IMAGE=", text, re.M)
    locked = locked_versions(REPO / VLLM_BASE.lock)
    assert locked["transformers"] == "4.57.6"
    assert "vllm" not in locked and "torch" not in locked  # the image brings them


def test_base_stack_is_cuda_12_8_on_ubuntu_24_04_with_gcc_uv_and_a_torch_assertion():
    text = (REPO / "Dockerfile.base").read_text()
    refs = {r.repository: r.tag for r in image_refs(REPO / "Dockerfile.base")}
    # the base flavour: torch's wheels bring the CUDA libraries the runtime flavour would duplicate
    assert refs["nvidia/cuda"].startswith("12.8.") and refs["nvidia/cuda"].endswith("-base-ubuntu24.04")
    assert refs["ghcr.io/astral-sh/uv"]
    assert re.search(r"apt-get install [^&]*\bgcc\b", text)
    assert "torch.version.cuda == '12.8'" in text
    assert re.search(r"^ARG CUDA_IMAGE=", text, re.M) and re.search(r"^ARG UV_IMAGE=", text, re.M)


def test_every_lock_carries_gpubench_runtime_dependencies():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {canonicalize_name(Requirement(d).name) for d in project["dependencies"]}
    shared, _ = parse_requirements(REPO / "images/_layers/gpubench.in")
    assert declared <= set(shared)
    for lock in [*(s.lock for s in STACKS), *(f"images/{s.name}/requirements.lock" for s in SPECS)]:
        locked = locked_versions(REPO / lock)
        assert declared <= set(locked), f"{lock} lacks {declared - set(locked)}"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.parent.name if p.name == "Dockerfile" else p.name)
def test_image_runs_gpubench_as_a_non_root_user_with_hf_home_on_the_cache_volume(path):
    under = [stack_of(path)] if stack_of(path) else list(STACKS) if path == REPO / TEMPLATE else [None]
    for stack in under:  # the template, on either stack
        runtime = dockerfile_instructions(REPO / stack.dockerfile if stack else path)
        users = [rest for _, keyword, rest in runtime if keyword == "USER"]
        own = [rest for _, keyword, rest in dockerfile_instructions(path) if keyword == "USER"]
        assert users[-1] == "1000:1000" and own[-1] == "1000:1000"
        assert ("ENTRYPOINT", '["gpubench"]') in [(k, r) for _, k, r in runtime]
        assert ("VOLUME", '["/cache"]') in [(k, r) for _, k, r in runtime]
        assert any(k == "ENV" and f"HF_HOME={HF_HOME}" in r for _, k, r in runtime)


def named(spec) -> str:
    """How the workload's Dockerfile writes its name: the template takes it as the WORKLOAD build arg."""
    return "${WORKLOAD}" if spec not in OWN else spec.name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_image_sets_its_name_version_and_commit_from_build_args(spec):
    path = dockerfile_of(spec)
    final = final_stage(path)
    args = {r.split("=", 1)[0] for _, k, r in final if k == "ARG"}
    env = " ".join(r for _, k, r in final if k == "ENV")
    for var in ("GPUBENCH_IMAGE", "GPUBENCH_IMAGE_VERSION", "GPUBENCH_GIT_COMMIT"):
        assert var in args and f"{var}=${{{var}}}" in env, f"{path} does not set {var}"
    assert f"ARG GPUBENCH_IMAGE=ghcr.io/gpubench/{named(spec)}\n" in path.read_text()
    if spec not in OWN:
        assert "COPY images/${WORKLOAD}/requirements.lock /tmp/requirements.lock" in path.read_text()
        assert ("ARG", "WORKLOAD") in [(k, r) for _, k, r in final]  # the last stage sees the build arg too


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_weights_build_arg_bakes_the_workloads_models_into_the_hub_cache(spec):
    text = dockerfile_of(spec).read_text()
    assert re.search(r"^ARG WEIGHTS=none$", text, re.M)
    assert "FROM runtime AS weights-none" in text and "FROM runtime AS weights-bake" in text
    assert f"-m gpubench.images bake-weights {named(spec)} {BAKED_WEIGHTS} " in text
    assert f"ENV HF_HUB_CACHE={BAKED_WEIGHTS}\n" in text
    assert re.search(r"^FROM weights-\$\{WEIGHTS\}$", text, re.M)


def test_torch_workloads_share_the_torch_stack_and_vllm_workloads_the_vllm_stack_of_this_version():
    on = {s.name: stack_for(s) for s in SPECS}
    assert sorted(n for n, stack in on.items() if stack == BASE) == sorted(s.name for s in SPECS if s not in VLLM)
    assert sorted(n for n, stack in on.items() if stack == VLLM_BASE) == sorted(s.name for s in VLLM)
    for spec in OWN:  # a Dockerfile of its own starts FROM the ARG of the stack the catalog puts it on
        stack = on[spec.name]
        text = dockerfile_of(spec).read_text()
        assert stack_of(dockerfile_of(spec)) == stack
        assert f"ARG {stack.arg}=ghcr.io/gpubench/{stack.name}:{__version__}\n" in text
        assert re.search(rf"^FROM \$\{{{stack.arg}\}} AS runtime$", text, re.M)
    template = (REPO / TEMPLATE).read_text()
    assert f"ARG STACK_IMAGE=ghcr.io/gpubench/{BASE.name}:{__version__}\n" in template
    assert re.search(r"^FROM \$\{STACK_IMAGE\} AS runtime$", template, re.M)
    bake = (REPO / "images/_layers/docker-bake.hcl").read_text()
    assert re.search(r'variable "VERSION" \{\s*default = "' + re.escape(__version__) + '"', bake)


def test_bake_file_builds_each_stack_and_each_workload_on_the_stack_and_dockerfile_the_catalog_gives():
    bake = (REPO / "images/_layers/docker-bake.hcl").read_text()
    for stack in STACKS:
        target = re.search(r'target "' + re.escape(stack.name) + r'" \{(.*?)\n\}', bake, re.S).group(1)
        assert f'dockerfile = "{stack.dockerfile}"' in target
        assert f'tags       = ["${{REGISTRY}}/{stack.name}:${{VERSION}}"]' in target
        assert f'{stack.arg} ' in bake.split('target "workload"')[1]
    body = re.sub(r'variable "WORKLOAD" \{.*?\n\}', "", bake, flags=re.S)  # its default aside, no workload is named:
    assert not [s.name for s in SPECS if f'"{s.name}"' in body]  # `python -m gpubench.images plan` says
    assert 'gpubench-stack = "target:${STACK}"' in bake and "dockerfile = DOCKERFILE\n" in bake
    assert re.search(r'variable "DOCKERFILE" \{\s*default = "' + re.escape(TEMPLATE) + '"', bake)
    for arg in ("WORKLOAD", "STACK_IMAGE"):
        assert re.search(rf"^\s+{arg}\s+= ", bake.split('target "workload"')[1], re.M)


def test_ci_builds_every_stack_before_the_workloads_and_gives_each_its_cache():
    workflow = (REPO / ".github/workflows/images.yml").read_text()
    assert f"stack: [{', '.join(s.name for s in STACKS)}]" in workflow
    assert "targets: ${{ matrix.stack }}" in workflow and "needs: [plan, stacks]" in workflow
    for stack in STACKS:
        assert f"{stack.name}.cache-from=type=gha,scope={stack.name}\n" in workflow


@pytest.mark.parametrize("spec", VLLM, ids=lambda s: s.name)
def test_vllm_images_build_on_the_vllm_stack_and_keep_its_transformers_4_57_6(spec):
    assert stack_for(spec) == VLLM_BASE
    assert not any(r.repository == "vllm/vllm-openai" for r in image_refs(dockerfile_of(spec)))  # only the stack
    locked = locked_versions(REPO / "images" / spec.name / "requirements.lock")
    assert locked["transformers"] == "4.57.6"
    assert "vllm" not in locked and "torch" not in locked  # the image brings them


def test_ollama_image_copies_the_server_from_its_pinned_official_image():
    path = REPO / "images/ollama-vs-vllm/Dockerfile"
    refs = {r.repository: r.tag for r in image_refs(path)}
    assert refs["ollama/ollama"] == WORKLOADS.get("ollama-vs-vllm").dependencies["ollama"]
    assert "COPY --from=ollama /usr/bin/ollama /usr/bin/ollama" in path.read_text()


def test_ollama_image_builds_llamacpp_from_the_pinned_source_where_gpubench_finds_it():
    from gpubench.servers.llamacpp import DIR_ENV, SOURCE_VERSION

    path = REPO / "images/ollama-vs-vllm/Dockerfile"
    text = path.read_text()
    args = dict(re.findall(r"^ARG (\w+)=\"?([^\"\n]*)\"?$", text, re.MULTILINE))
    assert args["LLAMA_CPP_PYTHON"] == SOURCE_VERSION  # the version the tests build with tools/llamacpp_build.sh
    assert re.search(r"^VERSION=\$\{GPUBENCH_LLAMA_CPP_PYTHON:-" + re.escape(SOURCE_VERSION) + r"\}",
                     (REPO / "tools/llamacpp_build.sh").read_text(), re.MULTILINE)
    assert "bash /src/tools/llamacpp_build.sh --cuda" in text and "--prefix /opt/llama.cpp" in text
    assert "COPY --from=llama-cpp /opt/llama.cpp /opt/llama.cpp" in text and f"{DIR_ENV}=/opt/llama.cpp" in text
    assert {r.repository for r in image_refs(path)} >= {"nvidia/cuda"}


def test_whisper_image_puts_torchs_cublas_on_the_library_path():
    """CTranslate2's Linux wheels load libcublas.so.12 by name and no cuDNN (built WITH_CUDNN=OFF since 4.6.3)."""
    text = (REPO / "images/whisper/Dockerfile").read_text()
    env = next(line for line in text.splitlines() if line.startswith("ENV LD_LIBRARY_PATH="))
    assert "site-packages/nvidia/cublas/lib" in env and "cudnn" not in env
    assert "libcublas.so.12" in text  # checked at build time


def test_build_context_holds_only_the_sources():
    ignore = (REPO / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*"):][:1] == ["*"]
    assert {"!gpubench/", "!workloads/", "!launcher/", "!images/", "!pyproject.toml", "!setup.py"} <= set(ignore)


def test_image_rows_list_every_workload_with_its_reference_and_locked_versions(monkeypatch):
    monkeypatch.delenv("GPUBENCH_IMAGE_REGISTRY", raising=False)
    rows = {row["name"]: row for row in image_rows()}
    assert list(rows) == WORKLOADS.names()
    assert rows["sdxl"]["image"] == f"ghcr.io/gpubench/sdxl:{__version__}"
    assert rows["sdxl"]["folder"] == "images/sdxl"
    assert rows["sdxl"]["locked"] == {"torch": "2.8.0", "diffusers": "0.42.1", "accelerate": "1.15.0"}
    assert rows["ollama-vs-vllm"]["locked"] == {"vllm": "0.11.0", "ollama": "0.40.12", "openai": "2.6.1"}
    for spec in SPECS:
        assert rows[spec.name]["locked"] == spec.dependencies
        assert rows[spec.name]["implemented"] == spec.implemented


def test_image_reference_follows_the_registry_override(monkeypatch):
    monkeypatch.setenv("GPUBENCH_IMAGE_REGISTRY", "registry.example:5000/bench/")
    assert image_ref(WORKLOADS.get("embed")) == f"registry.example:5000/bench/embed:{__version__}"
