"""The image checks catch bad input, and say which file and line: run on small bad trees in tmp_path."""

from __future__ import annotations

from pathlib import Path

from repo_tools import load

from gpubench.catalog import WorkloadSpec
from gpubench.images import REPO, TEMPLATE, VLLM_BASE, parse_requirements

checks = load("image_checks")
check_dockerfile, check_lock, check_registry = checks.check_dockerfile, checks.check_lock, checks.check_registry
check_same_stack, check_workload_image = checks.check_same_stack, checks.check_workload_image

HASH = "--hash=sha256:" + "a" * 64


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def messages(findings) -> list[str]:
    return [str(f) for f in findings]


def spec(name: str = "sdxl", **dependencies: str) -> WorkloadSpec:
    return WorkloadSpec(name=name, title="t", study="s", setups=("a",), gpus="1", gpu_count=1, min_gpu_memory_gb=1,
                        expected_minutes=1, dependencies={k.replace("_", "-"): v for k, v in dependencies.items()})


def good_folder(root: Path, name: str = "sdxl", lock: str = f"diffusers==0.42.1 {HASH}\n",
                from_line: str = "FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04") -> None:
    write(root, f"images/{name}/Dockerfile",
          f"{from_line}\nCOPY images/{name}/requirements.lock /tmp/\nRUN uv pip install -r /tmp/requirements.lock\n")
    write(root, f"images/{name}/requirements.in", "diffusers  # its version: the catalog's\n")
    write(root, f"images/{name}/requirements.lock", lock)


def test_latest_tag_is_named_with_file_and_line(tmp_path):
    dockerfile = write(tmp_path, "images/sdxl/Dockerfile", "# comment\n\nFROM python:latest\n")
    assert messages(check_dockerfile(dockerfile, tmp_path)) == [
        "images/sdxl/Dockerfile:3: FROM python:latest uses a floating tag: pin a version"]


def test_image_without_tag_is_caught(tmp_path):
    dockerfile = write(tmp_path, "Dockerfile", "FROM ubuntu\nRUN true\nFROM ghcr.io/org/tool AS tool\n")
    assert messages(check_dockerfile(dockerfile, tmp_path)) == [
        "Dockerfile:1: FROM ubuntu has no tag: pin a version",
        "Dockerfile:3: FROM ghcr.io/org/tool has no tag: pin a version"]


def test_floating_tag_in_an_arg_default_is_caught_where_it_is_used(tmp_path):
    dockerfile = write(tmp_path, "Dockerfile", "ARG BASE=nvidia/cuda:latest\nARG NOTHING\n"
                                               "FROM ${BASE}\nFROM $NOTHING\n")
    assert messages(check_dockerfile(dockerfile, tmp_path)) == [
        "Dockerfile:3: FROM ${BASE} (= nvidia/cuda:latest) uses a floating tag: pin a version",
        "Dockerfile:4: FROM $NOTHING: give the ARG a pinned default"]


def test_copy_from_a_floating_image_is_caught(tmp_path):
    dockerfile = write(tmp_path, "Dockerfile", "FROM ubuntu:24.04\nCOPY --from=ollama/ollama /usr/bin/ollama /x\n")
    assert messages(check_dockerfile(dockerfile, tmp_path)) == [
        "Dockerfile:2: COPY --from ollama/ollama has no tag: pin a version"]


def test_pinned_tags_digests_registry_ports_and_stages_pass(tmp_path):
    dockerfile = write(tmp_path, "Dockerfile", (
        "ARG UV=ghcr.io/astral-sh/uv:0.13.9\nARG WEIGHTS=none\n"
        "FROM ${UV} AS uv\n"
        "FROM localhost:5000/base@sha256:" + "b" * 64 + " AS runtime\n"
        "COPY --from=uv /uv /usr/local/bin/uv\n"
        "FROM runtime AS weights-none\n"
        "FROM weights-${WEIGHTS}\n"
        "FROM scratch\n"))
    assert check_dockerfile(dockerfile, tmp_path) == []


def test_unpinned_pip_install_in_a_dockerfile_is_caught(tmp_path):
    dockerfile = write(tmp_path, "Dockerfile", (
        "FROM ubuntu:24.04\n"
        "RUN pip install --no-cache-dir requests==2.32.3 \\\n"
        "    uv && echo done\n"
        "RUN uv pip install --system -r /tmp/lock --no-deps /src 'numpy>=2'\n"))
    assert messages(check_dockerfile(dockerfile, tmp_path)) == [
        "Dockerfile:2: installs uv without an exact version (pin it with == or install from a lock)",
        "Dockerfile:4: installs numpy>=2 without an exact version (pin it with == or install from a lock)"]


def test_unpinned_package_in_a_lock_is_caught(tmp_path):
    lock = write(tmp_path, "images/x/requirements.lock", f"torch==2.8.0 {HASH}\nrequests>=2 {HASH}\nnumpy\n")
    assert messages(check_lock(lock, root=tmp_path)) == [
        "images/x/requirements.lock:2: requests is not pinned to one version (>=2); a lock pins ==X.Y.Z",
        "images/x/requirements.lock:3: numpy is not pinned to one version (any version); a lock pins ==X.Y.Z"]


def test_requirement_lines_are_read_as_pip_reads_them(tmp_path):
    path = write(tmp_path, "images/x/requirements.in", "Sentence_Transformers[onnx]==5.1.0 ; python_version >= '3.11'\n"
                 "torch===2.8.0\nnumpy==2.*\nrich>=13,<15\nnot a requirement\nsentence-transformers==5.1.1\n")
    pins, findings = parse_requirements(path, tmp_path)
    assert {name: pin.version for name, pin in pins.items()} == {
        "sentence-transformers": "5.1.0", "torch": "2.8.0", "numpy": None, "rich": None}
    assert pins["rich"].spec == "<15,>=13"
    assert messages(findings) == [
        "images/x/requirements.in:5: cannot read requirement 'not a requirement'",
        "images/x/requirements.in:6: sentence-transformers is listed twice (first on line 1)"]


def test_lock_entry_without_a_hash_is_caught(tmp_path):
    lock = write(tmp_path, "images/x/requirements.lock", f"torch==2.8.0 \\\n    {HASH}\n    # via x\nsix==1.17.0\n")
    assert messages(check_lock(lock, root=tmp_path)) == ["images/x/requirements.lock:4: six==1.17.0 has no --hash"]


def test_lock_missing_an_input_requirement_is_caught(tmp_path):
    write(tmp_path, "images/_shared.in", "click>=8.1\n")
    req_in = write(tmp_path, "images/x/requirements.in", "-r ../_shared.in\n\ntorch==2.8.0\npeft==0.17.1\n")
    lock = write(tmp_path, "images/x/requirements.lock", f"torch==2.8.0 {HASH}\npeft==0.17.0 {HASH}\n")
    assert messages(check_lock(lock, req_in, tmp_path)) == [
        "images/x/requirements.lock:1: click from images/_shared.in:1 is missing from the lock",
        "images/x/requirements.lock:2: peft==0.17.0 but images/x/requirements.in:4 asks for ==0.17.1"]


def test_missing_lock_is_caught(tmp_path):
    assert messages(check_lock(tmp_path / "images/x/requirements.lock", root=tmp_path)) == [
        "images/x/requirements.lock:1: missing: run python tools/lock_images.py"]


def test_workload_without_an_image_is_caught_at_its_catalog_entry(tmp_path):
    write(tmp_path, "gpubench/catalog.py", 'X = 1\nWORKLOADS.add("embed", WorkloadSpec(\n')
    good_folder(tmp_path, "sdxl")
    assert messages(check_registry(["sdxl", "embed"], tmp_path)) == [
        "gpubench/catalog.py:2: workload 'embed' has no image: create images/embed/"]


def test_image_folder_of_no_workload_is_caught_and_shared_layers_are_not(tmp_path):
    good_folder(tmp_path, "sdxl")
    good_folder(tmp_path, "retired")
    (tmp_path / "images/_layers").mkdir()
    assert messages(check_registry(["sdxl"], tmp_path)) == [
        "images/retired/Dockerfile:1: images/retired/ belongs to no workload in gpubench/catalog.py"]


def test_locked_version_other_than_the_catalogs_is_caught(tmp_path):
    write(tmp_path, "gpubench/catalog.py", '\n\nWORKLOADS.add("sdxl", WorkloadSpec(\n')
    good_folder(tmp_path, lock=f"diffusers==0.42.1 {HASH}\naccelerate==1.14.0 {HASH}\n")
    found = messages(check_workload_image(spec(diffusers="0.42.1", accelerate="1.15.0", torch="2.8.0"), tmp_path))
    assert found == [
        "images/sdxl/requirements.lock:2: accelerate==1.14.0 but gpubench/catalog.py:3 declares accelerate==1.15.0",
        "images/sdxl/requirements.lock:1: torch is not locked; gpubench/catalog.py:3 declares torch==2.8.0"]


def test_a_good_folder_passes(tmp_path):
    good_folder(tmp_path)
    assert check_workload_image(spec(diffusers="0.42.1"), tmp_path) == []


def test_workload_folder_missing_its_files_is_caught(tmp_path):
    (tmp_path / "images/sdxl").mkdir(parents=True)
    assert messages(check_workload_image(spec(diffusers="0.42.1"), tmp_path)) == [
        "images/_layers/workload/Dockerfile:1: missing", "images/sdxl/requirements.in:1: missing",
        "images/sdxl/requirements.lock:1: missing: run python tools/lock_images.py"]


def test_a_folder_without_a_dockerfile_builds_from_the_template_which_must_install_its_lock(tmp_path):
    good_folder(tmp_path)
    (tmp_path / "images/sdxl/Dockerfile").unlink()
    write(tmp_path, TEMPLATE, (REPO / TEMPLATE).read_text())
    assert check_workload_image(spec(diffusers="0.42.1"), tmp_path) == []
    write(tmp_path, TEMPLATE, (REPO / TEMPLATE).read_text().replace("images/${WORKLOAD}/requirements.lock", "x.lock"))
    assert messages(check_workload_image(spec(diffusers="0.42.1"), tmp_path)) == [
        "images/_layers/workload/Dockerfile:1: does not install images/${WORKLOAD}/requirements.lock"]


def test_a_dockerfile_on_another_stack_than_the_catalog_gives_is_caught(tmp_path):
    write(tmp_path, "gpubench/catalog.py", 'WORKLOADS.add("sdxl", WorkloadSpec(\n')
    good_folder(tmp_path, from_line="ARG VLLM_BASE_IMAGE=ghcr.io/gpubench/vllm-base:0.1.0\nFROM ${VLLM_BASE_IMAGE}")
    assert messages(check_workload_image(spec(diffusers="0.42.1"), tmp_path)) == [
        "images/sdxl/Dockerfile:1: builds on vllm-base (FROM ${VLLM_BASE_IMAGE}) but gpubench/catalog.py:1 puts sdxl"
        " on base"]


def test_a_requirements_in_that_pins_a_catalog_dependency_is_caught(tmp_path):
    write(tmp_path, "gpubench/catalog.py", 'WORKLOADS.add("sdxl", WorkloadSpec(\n')
    good_folder(tmp_path)
    write(tmp_path, "images/sdxl/requirements.in", "# the study's\ndiffusers==0.42.1\n")
    assert messages(check_workload_image(spec(diffusers="0.42.1"), tmp_path)) == [
        "images/sdxl/requirements.in:2: diffusers==0.42.1 is the catalog's pin (gpubench/catalog.py:1): leave it out"
        " here"]


def test_dockerfile_that_does_not_install_its_lock_is_caught(tmp_path):
    good_folder(tmp_path)
    write(tmp_path, "images/sdxl/Dockerfile", "FROM ubuntu:24.04\nRUN uv pip install diffusers==0.42.1\n")
    assert messages(check_workload_image(spec(diffusers="0.42.1"), tmp_path)) == [
        "images/sdxl/Dockerfile:1: does not install images/sdxl/requirements.lock"]


def test_image_tag_other_than_the_catalogs_version_is_caught(tmp_path):
    write(tmp_path, "gpubench/catalog.py", 'WORKLOADS.add("vllm-serving", WorkloadSpec(\n')
    good_folder(tmp_path, "vllm-serving", lock=f"diffusers==0.42.1 {HASH}\n",
                from_line="ARG VLLM_IMAGE=vllm/vllm-openai:v0.10.2\nFROM ${VLLM_IMAGE}")
    assert messages(check_workload_image(spec("vllm-serving", vllm="0.11.0"), tmp_path)) == [
        "images/vllm-serving/Dockerfile:2: vllm/vllm-openai:v0.10.2 but gpubench/catalog.py:1 declares vllm 0.11.0"]


def test_lock_that_moves_a_pin_of_the_base_stack_is_caught(tmp_path):
    base = write(tmp_path, "images/_layers/base/requirements.lock", f"torch==2.8.0 {HASH}\nnumpy==2.5.5 {HASH}\n")
    lock = write(tmp_path, "images/x/requirements.lock", f"torch==2.9.0 {HASH}\n")
    assert messages(check_same_stack(lock, base, tmp_path)) == [
        "images/x/requirements.lock:1: torch==2.9.0 but the stack images/_layers/base/requirements.lock:1 "
        "pins ==2.8.0",
        "images/x/requirements.lock:1: no numpy but the stack images/_layers/base/requirements.lock:2 "
        "pins ==2.5.5"]


def vllm_stack(root: Path, tag: str = "v0.11.0", lock: str = f"transformers==4.57.6 {HASH}\n") -> None:
    write(root, VLLM_BASE.dockerfile, f"ARG VLLM_IMAGE=vllm/vllm-openai:{tag}\nFROM ${{VLLM_IMAGE}}\n"
                                      f"COPY {VLLM_BASE.lock} /tmp/\nRUN uv pip install -r /tmp/vllm-base.lock\n")
    write(root, VLLM_BASE.lock, lock)


def vllm_folder(root: Path, lock: str) -> None:
    good_folder(root, "vllm-serving", lock=lock,
                from_line="ARG VLLM_BASE_IMAGE=ghcr.io/gpubench/vllm-base:0.1.0\nFROM ${VLLM_BASE_IMAGE} AS runtime")
    write(root, "images/vllm-serving/requirements.in", "transformers\n")


def test_workload_on_the_vllm_stack_takes_vllm_from_the_stacks_image(tmp_path):
    vllm_stack(tmp_path)
    vllm_folder(tmp_path, f"transformers==4.57.6 {HASH}\n")
    assert check_workload_image(spec("vllm-serving", vllm="0.11.0", transformers="4.57.6"), tmp_path) == []


def test_vllm_stack_on_another_vllm_than_the_catalogs_is_caught_in_the_stacks_dockerfile(tmp_path):
    write(tmp_path, "gpubench/catalog.py", 'WORKLOADS.add("vllm-serving", WorkloadSpec(\n')
    vllm_stack(tmp_path, tag="v0.10.2")
    vllm_folder(tmp_path, f"transformers==4.57.6 {HASH}\n")
    assert messages(check_workload_image(spec("vllm-serving", vllm="0.11.0"), tmp_path)) == [
        "images/_layers/vllm-base/Dockerfile:2: vllm/vllm-openai:v0.10.2 but gpubench/catalog.py:1 declares "
        "vllm 0.11.0"]


def test_lock_that_moves_a_pin_of_the_vllm_stack_is_caught(tmp_path):
    vllm_stack(tmp_path, lock=f"transformers==4.57.6 {HASH}\nhuggingface-hub==0.35.3 {HASH}\n")
    vllm_folder(tmp_path, f"transformers==4.57.6 {HASH}\nhuggingface-hub==0.36.0 {HASH}\n")
    assert messages(check_workload_image(spec("vllm-serving", vllm="0.11.0"), tmp_path)) == [
        "images/vllm-serving/requirements.lock:1: huggingface-hub==0.36.0 but the stack "
        "images/_layers/vllm-base/requirements.lock:2 pins ==0.35.3"]
