"""The workloads' Docker images: their references, their folders under images/, what their files pin, and baking
weights into one (`python -m gpubench.images bake-weights`, run inside the Dockerfiles).

Every workload in the catalog has `images/<name>/` with a requirements.in and a requirements.lock (exact versions
with hashes, linux x86_64, Python 3.12), and a Dockerfile only where its image does more than install that lock
(whisper, ollama-vs-vllm): the others build from the one template, images/_layers/workload/Dockerfile. Folders whose
name starts with "_" hold shared layers (images/_layers/), not workloads. A workload image builds on one of the
STACKS, the one the catalog puts it on (`stack_for`: its dependencies hold vllm or not), and locks only what it adds
on top. `python -m gpubench.images plan` prints each image's stack and Dockerfile for the builds (bake, CI,
tools/build_images.sh), so the image list and its groups come from the catalog.
The repository's checks on those files live in tools/image_checks.py.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpubench.catalog import WORKLOADS, WorkloadSpec

REPO = Path(__file__).resolve().parent.parent
IMAGES = "images"
CACHE_DIR = "/cache"  # the image's cache volume; HF_HOME lives under it
HF_HOME = f"{CACHE_DIR}/huggingface"
BAKED_WEIGHTS = "/opt/gpubench/weights"  # HF_HUB_CACHE of an image built with WEIGHTS=bake

# Catalog dependencies that an image brings rather than a lock: the image repository whose tag is the version.
FROM_IMAGE = {"vllm": "vllm/vllm-openai", "ollama": "ollama/ollama"}
# Files a baked image does not need: other frameworks' exports of the same weights.
BAKE_IGNORE = ["*.onnx", "*.onnx_data", "onnx/*", "openvino/*", "*.msgpack", "*.h5", "*.ot", "*.tflite",
               "coreml/*", "flax_model*", "tf_model*", "rust_model*"]

if TYPE_CHECKING:
    from packaging.requirements import Requirement

_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Stack:
    """A shared layer stack that workload images build on with `FROM ${arg}`; it is pushed as <registry>/<name>."""

    name: str  # the image name, the docker-bake.hcl target and the name tools/lock_images.py knows it by
    arg: str  # the ARG of the workload Dockerfiles' FROM; its default is ghcr.io/gpubench/<name>:<version>
    dockerfile: str
    lock: str  # installed by the stack; a workload's lock on it keeps every pin of it

    @property
    def requirements_in(self) -> str:
        return self.lock.removesuffix(".lock") + ".in"


# The torch stack (CUDA 12.8 base, torch 2.8.0 from PyPI) and the vLLM stack (vllm/vllm-openai:v0.11.0).
BASE = Stack("base", "BASE_IMAGE", "Dockerfile.base", "images/_layers/base/requirements.lock")
VLLM_BASE = Stack("vllm-base", "VLLM_BASE_IMAGE", "images/_layers/vllm-base/Dockerfile",
                  "images/_layers/vllm-base/requirements.lock")
STACKS = (BASE, VLLM_BASE)
TEMPLATE = "images/_layers/workload/Dockerfile"  # FROM ${STACK_IMAGE}; WORKLOAD names the folder
TEMPLATE_ARG = "STACK_IMAGE"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Pin:
    name: str  # normalized
    version: str | None  # None unless pinned with ==
    spec: str
    hashes: int
    line: int
    path: str  # the file it is listed in (a requirements.in may include others)


def relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _logical_lines(text: str, comment_in_continuation: bool = False):
    """(first line number, joined text) for each backslash-continued line."""
    start, parts = None, []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if parts and comment_in_continuation and stripped.startswith("#"):
            continue  # Docker drops comment lines inside a continued instruction
        if start is None:
            start = number
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        yield start, " ".join(p.strip() for p in parts).strip()
        start, parts = None, []
    if parts:
        yield start, " ".join(parts).strip()


# ---- requirements and locks ---------------------------------------------------------------------------------------

def parse_requirements(path: Path, root: Path = REPO, _seen=None) -> tuple[dict[str, Pin], list[Finding]]:
    """Requirements of a requirements.in or lock file, following `-r` includes."""
    # packaging comes with the dev install (image checks, locks), imported here rather than above: the base stack's
    # images run this module (bake-weights) without it, and an installed gpubench has no requirement files to read.
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    seen = _seen if _seen is not None else set()
    pins: dict[str, Pin] = {}
    findings: list[Finding] = []
    where = relative(path, root)
    if path.resolve() in seen:
        return pins, findings
    seen.add(path.resolve())
    for line, text in _logical_lines(path.read_text()):
        text = re.sub(r"(^|\s)#.*$", "", text).strip()
        if not text:
            continue
        if text.startswith(("-r ", "--requirement ")):
            included = path.parent / text.split(None, 1)[1]
            if not included.exists():
                findings.append(Finding(where, line, f"includes {text.split(None, 1)[1]}, which does not exist"))
                continue
            more, problems = parse_requirements(included, root, seen)
            pins.update({k: v for k, v in more.items() if k not in pins})
            findings += problems
            continue
        if text.startswith("-"):
            findings.append(Finding(where, line, f"option line not allowed here: {text.split()[0]}"))
            continue
        body = _HASH.sub("", text).strip()
        try:
            requirement = Requirement(body)
        except InvalidRequirement:
            findings.append(Finding(where, line, f"cannot read requirement {body!r}"))
            continue
        name = canonicalize_name(requirement.name)
        if name in pins:
            findings.append(Finding(where, line, f"{name} is listed twice (first on line {pins[name].line})"))
            continue
        pins[name] = Pin(name, exact_version(requirement), str(requirement.specifier), len(_HASH.findall(text)), line,
                         where)
    return pins, findings


def exact_version(requirement: Requirement) -> str | None:
    """The one version a requirement pins (==X or ===X, no wildcard); None for a range or no version."""
    specifiers = list(requirement.specifier)
    if len(specifiers) == 1 and specifiers[0].operator in ("==", "===") and not specifiers[0].version.endswith("*"):
        return specifiers[0].version
    return None


def locked_versions(lock: Path, names=None) -> dict[str, str | None]:
    """{name: version} of a lock's pins, by canonical name, or by each of `names` as written (those it pins)."""
    if not lock.exists():
        return {}
    from packaging.utils import canonicalize_name

    pins, _ = parse_requirements(lock, lock.parent)
    versions = {name: pin.version for name, pin in pins.items()}
    if names is None:
        return versions
    return {name: versions[canonicalize_name(name)] for name in names if canonicalize_name(name) in versions}


# ---- Dockerfiles --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ImageRef:
    line: int
    ref: str  # after ARG defaults are substituted
    written: str  # as the Dockerfile has it
    via: str  # "FROM" or "COPY --from"

    @property
    def repository(self) -> str:
        name = self.ref.split("@", 1)[0]
        return name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name

    @property
    def tag(self) -> str | None:
        name = self.ref.split("@", 1)[0]
        last = name.rsplit("/", 1)[-1]
        return last.rsplit(":", 1)[1] if ":" in last else None

    @property
    def digest(self) -> str | None:
        return self.ref.split("@", 1)[1] if "@" in self.ref else None


def dockerfile_instructions(path: Path) -> list[tuple[int, str, str]]:
    """(line, INSTRUCTION, arguments) for each instruction; heredoc bodies are skipped."""
    out, heredoc = [], None
    for line, text in _logical_lines(path.read_text(), comment_in_continuation=True):
        if heredoc:
            if text == heredoc:
                heredoc = None
            continue
        if not text or text.startswith("#"):
            continue
        keyword, _, rest = text.partition(" ")
        out.append((line, keyword.upper(), rest.strip()))
        marker = re.search(r"<<-?[\"']?([A-Za-z_]+)[\"']?", rest)
        if marker and keyword.upper() in ("RUN", "COPY"):
            heredoc = marker.group(1)
    return out


def _substitute(text: str, args: dict[str, str | None]) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        found = args.get(name)
        return found if found is not None else match.group(0)
    return _VAR.sub(value, text)


def image_refs(path: Path) -> list[ImageRef]:
    """The external images a Dockerfile builds from (FROM) or copies from (COPY --from), ARG defaults applied."""
    args: dict[str, str | None] = {}
    stages: set[str] = set()
    refs = []
    for line, keyword, rest in dockerfile_instructions(path):
        if keyword == "ARG":
            for item in rest.split():
                name, eq, default = item.partition("=")
                if not eq and name in args:
                    continue  # a re-declaration in a stage keeps the global default
                args[name] = default.strip("\"'") if eq else None
        elif keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--platform")]
            written = words[0]
            ref = _substitute(written, args)
            if len(words) >= 3 and words[1].lower() == "as":
                stages.add(words[2].lower())
            if ref.lower() not in stages and ref != "scratch":
                refs.append(ImageRef(line, ref, written, "FROM"))
        elif keyword == "COPY":
            source = re.search(r"--from=(\S+)", rest)
            if source and source.group(1).lower() not in stages and not source.group(1).isdigit():
                refs.append(ImageRef(line, _substitute(source.group(1), args), source.group(1), "COPY --from"))
    return refs


# ---- the workloads' folders ---------------------------------------------------------------------------------------

def folder(spec: WorkloadSpec, root: Path = REPO) -> Path:
    return root / IMAGES / spec.name


def image_ref(spec: WorkloadSpec) -> str:
    """The default image reference (GPUBENCH_IMAGE_REGISTRY overrides the registry)."""
    return spec.image


def image_provider(dependency: str, sources: list[tuple[str, ImageRef]]) -> tuple[str, ImageRef] | None:
    """The image a dependency comes from (vllm from vllm/vllm-openai) and the file naming it, if there is one."""
    repository = FROM_IMAGE.get(dependency)
    return next(((f, r) for f, r in sources if repository and r.repository.endswith(repository)), None)


def image_version(ref: ImageRef) -> str | None:
    return (ref.tag or "").removeprefix("v") or None


def stack_of(dockerfile: Path) -> Stack | None:
    """The shared stack a workload's Dockerfile builds on (its `FROM ${BASE_IMAGE}` or `FROM ${VLLM_BASE_IMAGE}`)."""
    for _, keyword, rest in dockerfile_instructions(dockerfile):
        if keyword == "FROM":
            found = next((s for s in STACKS if f"${{{s.arg}}}" in rest), None)
            if found:
                return found
    return None


def stack_for(spec: WorkloadSpec) -> Stack:
    """The stack the catalog puts a workload on: the vLLM stack when its dependencies hold vllm, else the torch one."""
    return VLLM_BASE if "vllm" in spec.dependencies else BASE


def dockerfile_of(spec: WorkloadSpec, root: Path = REPO) -> Path:
    """The workload's own images/<name>/Dockerfile where it has one, else the template every other one builds from."""
    own = folder(spec, root) / "Dockerfile"
    return own if own.exists() else root / TEMPLATE


def plan(root: Path = REPO) -> list[dict[str, str]]:
    """What the builds need per workload image, from the catalog: its name, its stack's name and its Dockerfile."""
    return [{"name": spec.name, "stack": stack_for(spec).name, "dockerfile": relative(dockerfile_of(spec, root), root)}
            for spec in WORKLOADS]


def image_sources(dockerfile: Path, root: Path = REPO, stack: Stack | None = None) -> list[tuple[str, ImageRef]]:
    """(file, image) for the images a workload builds on: its Dockerfile's own, then those of the stack under it
    (`stack`, else the one its Dockerfile names)."""
    sources = [(relative(dockerfile, root), ref) for ref in image_refs(dockerfile)
               if ref.written != f"${{{TEMPLATE_ARG}}}"]
    stack = stack or stack_of(dockerfile)
    if stack is not None and (root / stack.dockerfile).exists():
        sources += [(stack.dockerfile, ref) for ref in image_refs(root / stack.dockerfile)]
    return sources


def image_rows(root: Path = REPO) -> list[dict]:
    """One row per workload for `gpubench images`."""
    rows = []
    for spec in WORKLOADS:
        lock = folder(spec, root) / "requirements.lock"
        pins = locked_versions(lock, spec.dependencies)
        sources = image_sources(dockerfile_of(spec, root), root, stack_for(spec))
        locked = {}
        for dep in spec.dependencies:
            provider = image_provider(dep, sources)
            locked[dep] = image_version(provider[1]) if provider else pins.get(dep)
        rows.append({"name": spec.name, "image": image_ref(spec), "folder": f"{IMAGES}/{spec.name}",
                     "implemented": spec.implemented, "locked": locked})
    return rows


# ---- baking weights into an image ---------------------------------------------------------------------------------

def bake_weights(spec: WorkloadSpec, into: Path, cache: Path | None = None) -> list[str]:
    """Download the workload's Hub repos into `into` (an HF_HUB_CACHE). Run by `docker build --build-arg
    WEIGHTS=bake`; `cache` is a BuildKit cache mount, so a rebuild copies instead of downloading again."""
    if not spec.weights:
        return []
    from huggingface_hub import list_repo_files, snapshot_download

    from gpubench.weights import cache_folder_name, hub_repo

    store = cache or into
    for entry in spec.weights:
        repo_type, repo = hub_repo(entry)
        ignore = list(BAKE_IGNORE)
        if any(f.endswith(".safetensors") for f in list_repo_files(repo, repo_type=repo_type)):
            ignore.append("*pytorch_model*.bin")
        snapshot_download(repo, repo_type=repo_type, cache_dir=store, ignore_patterns=ignore)
        if cache is not None:
            name = cache_folder_name(entry)
            shutil.copytree(cache / name, into / name, symlinks=True, dirs_exist_ok=True)
    return list(spec.weights)


USAGE = """usage: python -m gpubench.images plan             # one line per workload image: NAME STACK DOCKERFILE
       python -m gpubench.images names            # the workload images, as a JSON list (CI's matrix)
       python -m gpubench.images bake-env NAME    # STACK=... and DOCKERFILE=... for docker-bake.hcl
       python -m gpubench.images bake-weights NAME INTO [CACHE]"""


def main(argv: list[str]) -> int:
    if argv == ["plan"]:
        print("\n".join(f"{row['name']} {row['stack']} {row['dockerfile']}" for row in plan()))
        return 0
    if argv == ["names"]:
        print(json.dumps(WORKLOADS.names()))
        return 0
    if len(argv) == 2 and argv[0] == "bake-env":
        row = next((row for row in plan() if row["name"] == argv[1]), None)
        if row is None:
            print(f"unknown workload {argv[1]!r}; valid: {', '.join(WORKLOADS.names())}", file=sys.stderr)
            return 2
        print(f"STACK={row['stack']}\nDOCKERFILE={row['dockerfile']}")
        return 0
    if len(argv) not in (3, 4) or argv[0] != "bake-weights":
        print(USAGE, file=sys.stderr)
        return 2
    spec = WORKLOADS.get(argv[1])
    into = Path(argv[2])
    into.mkdir(parents=True, exist_ok=True)
    baked = bake_weights(spec, into, Path(argv[3]) if len(argv) == 4 else None)
    print(f"baked {', '.join(baked)} into {into}" if baked else f"{spec.name} loads no weights; nothing baked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
