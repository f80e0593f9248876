"""The repository's checks on the workloads' images (run by tests/test_images_*.py on the real tree and on small bad
ones): every registered workload has `images/<name>/`, Dockerfiles (a workload's own or the template) pin their base
images and packages, locks are complete and hashed, versions are what the catalog declares, a workload's own
Dockerfile builds on the stack the catalog puts it on, and a lock on a shared stack keeps the stack's pins.
Each check returns findings that name a file and a line.

    python tools/image_checks.py     # the real tree: prints each finding, exits 1 if there is any

What an image needs at run time (its reference, baking weights) stays in gpubench/images.py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpubench.catalog import WORKLOADS, WorkloadSpec  # noqa: E402
from gpubench.images import (  # noqa: E402
    IMAGES,
    REPO,
    STACKS,
    TEMPLATE,
    Finding,
    dockerfile_instructions,
    dockerfile_of,
    image_provider,
    image_refs,
    image_sources,
    image_version,
    locked_versions,
    parse_requirements,
    relative,
    stack_for,
    stack_of,
)

CATALOG = "gpubench/catalog.py"


def check_lock(lock: Path, requirements_in: Path | None = None, root: Path = REPO) -> list[Finding]:
    """A lock is complete and hashed: every entry pinned with == and hashed, every input requirement present."""
    where = relative(lock, root)
    if not lock.exists():
        return [Finding(where, 1, "missing: run python tools/lock_images.py")]
    pins, findings = parse_requirements(lock, root)
    for pin in pins.values():
        if pin.version is None:
            findings.append(Finding(where, pin.line, f"{pin.name} is not pinned to one version "
                                                     f"({pin.spec or 'any version'}); a lock pins ==X.Y.Z"))
        elif not pin.hashes:
            findings.append(Finding(where, pin.line, f"{pin.name}=={pin.version} has no --hash"))
    if not pins:
        findings.append(Finding(where, 1, "lock pins nothing"))
    if requirements_in is not None and requirements_in.exists():
        wanted, problems = parse_requirements(requirements_in, root)
        findings += problems
        for name, want in wanted.items():
            have = pins.get(name)
            source = f"{want.path}:{want.line}"
            if have is None:
                findings.append(Finding(where, 1, f"{name} from {source} is missing from the lock"))
            elif want.version and have.version and want.version != have.version:
                findings.append(Finding(where, have.line, f"{name}=={have.version} but {source} asks for "
                                                          f"=={want.version}"))
    return findings


_PIP_INSTALL = re.compile(r"\b(?:uv\s+)?pip3?\s+install\b(.*?)(?:&&|\|\||;|$)")


_TAKES_VALUE = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
                "--extra-index-url", "-f", "--find-links", "-t", "--target", "--python", "-p", "--prefix",
                "--root", "--cache-dir", "--src", "--platform", "--python-version", "--python-platform"}


def check_dockerfile(path: Path, root: Path = REPO) -> list[Finding]:
    """Floating base images (no tag, or `latest`) and packages installed without an exact version."""
    where = relative(path, root)
    if not path.exists():
        return [Finding(where, 1, "missing")]
    findings = []
    for ref in image_refs(path):
        shown = ref.written if ref.written == ref.ref else f"{ref.written} (= {ref.ref})"
        if "$" in ref.ref:
            findings.append(Finding(where, ref.line, f"{ref.via} {shown}: give the ARG a pinned default"))
        elif ref.digest:
            continue
        elif ref.tag is None:
            findings.append(Finding(where, ref.line, f"{ref.via} {shown} has no tag: pin a version"))
        elif ref.tag == "latest":
            findings.append(Finding(where, ref.line, f"{ref.via} {shown} uses a floating tag: pin a version"))
    for line, keyword, rest in dockerfile_instructions(path):
        if keyword != "RUN":
            continue
        for install in _PIP_INSTALL.finditer(rest):
            words, skip = install.group(1).split(), False
            for word in words:
                if skip:
                    skip = False
                elif word.startswith("-"):
                    skip = word in _TAKES_VALUE
                elif word.startswith(("/", ".", "$", "\"$")) or "==" in word:
                    continue
                else:
                    findings.append(Finding(where, line, f"installs {word.strip(chr(34) + chr(39))} without an exact "
                                                         f"version (pin it with == or install from a lock)"))
    return findings


def _catalog_line(name: str, root: Path) -> int:
    catalog = root / CATALOG
    if catalog.exists():
        for number, text in enumerate(catalog.read_text().splitlines(), 1):
            if f'WORKLOADS.add("{name}"' in text:
                return number
    return 1


def check_registry(names, root: Path = REPO) -> list[Finding]:
    """Every registered workload has an image folder, and every folder belongs to a workload."""
    findings = []
    images = root / IMAGES
    folders = {p.name for p in images.iterdir() if p.is_dir() and not p.name.startswith("_")} if images.is_dir() \
        else set()
    for name in names:
        if name not in folders:
            findings.append(Finding(CATALOG, _catalog_line(name, root),
                                    f"workload {name!r} has no image: create {IMAGES}/{name}/"))
    for name in sorted(folders - set(names)):
        findings.append(Finding(f"{IMAGES}/{name}/Dockerfile", 1,
                                f"{IMAGES}/{name}/ belongs to no workload in {CATALOG}"))
    return findings


def check_workload_image(spec: WorkloadSpec, root: Path = REPO) -> list[Finding]:
    """One workload's folder: files present, Dockerfile pinned, lock complete, versions as the catalog declares."""
    base = root / IMAGES / spec.name
    rel = f"{IMAGES}/{spec.name}"
    dockerfile, req_in, lock = dockerfile_of(spec, root), base / "requirements.in", base / "requirements.lock"
    findings = [Finding(relative(p, root), 1, "missing") for p in (dockerfile, req_in) if not p.exists()]
    findings += check_lock(lock, req_in, root)
    if not dockerfile.exists():
        return findings
    stack = stack_for(spec)
    own = relative(dockerfile, root) != TEMPLATE
    if own:  # the template is checked once (main, the tests); a workload's own Dockerfile here
        findings += check_dockerfile(dockerfile, root)
        if f"{rel}/requirements.lock" not in dockerfile.read_text():
            findings.append(Finding(f"{rel}/Dockerfile", 1, f"does not install {rel}/requirements.lock"))
        named = stack_of(dockerfile)
        if named is not None and named != stack:
            findings.append(Finding(f"{rel}/Dockerfile", 1, f"builds on {named.name} (FROM ${{{named.arg}}}) but "
                                    f"{CATALOG}:{_catalog_line(spec.name, root)} puts {spec.name} on {stack.name}"))
    elif "images/${WORKLOAD}/requirements.lock" not in dockerfile.read_text():
        findings.append(Finding(TEMPLATE, 1, "does not install images/${WORKLOAD}/requirements.lock"))
    if req_in.exists():  # the study's versions are written once, in the catalog: lock_images.py adds them
        for pin in parse_requirements(req_in, root)[0].values():
            declared = {canonicalize_name(d): d for d in spec.dependencies}.get(pin.name)
            if declared and pin.version and pin.path == f"{rel}/requirements.in":
                findings.append(Finding(pin.path, pin.line, f"{pin.name}=={pin.version} is the catalog's pin "
                                        f"({CATALOG}:{_catalog_line(spec.name, root)}): leave it out here"))
    pins, _ = parse_requirements(lock, root) if lock.exists() else ({}, [])
    sources = image_sources(dockerfile, root, stack)
    for dep, version in spec.dependencies.items():
        provider = image_provider(dep, sources)
        if provider is not None:
            where, ref = provider
            if image_version(ref) != version:
                findings.append(Finding(where, ref.line, f"{ref.ref} but {CATALOG}:"
                                        f"{_catalog_line(spec.name, root)} declares {dep} {version}"))
            continue
        pin = pins.get(canonicalize_name(dep))
        if pin is None:
            findings.append(Finding(f"{rel}/requirements.lock", 1, f"{dep} is not locked; {CATALOG}:"
                                    f"{_catalog_line(spec.name, root)} declares {dep}=={version}"))
        elif pin.version != version:
            findings.append(Finding(f"{rel}/requirements.lock", pin.line, f"{dep}=={pin.version} but {CATALOG}:"
                                    f"{_catalog_line(spec.name, root)} declares {dep}=={version}"))
    findings += check_same_stack(lock, root / stack.lock, root)
    return findings


def check_same_stack(lock: Path, stack_lock: Path, root: Path = REPO) -> list[Finding]:
    """A lock installed over a stack keeps every pin of the stack's lock, so nothing under it is reinstalled."""
    if not lock.exists() or not stack_lock.exists():
        return []
    pins, stack = locked_versions(lock), parse_requirements(stack_lock, root)[0]
    where, findings = relative(lock, root), []
    for name, pin in stack.items():
        if pins.get(name) != pin.version:
            got = f"{name}=={pins[name]}" if name in pins else f"no {name}"
            findings.append(Finding(where, 1, f"{got} but the stack "
                                              f"{relative(stack_lock, root)}:{pin.line} pins =={pin.version}"))
    return findings


def main() -> int:
    findings = check_registry(WORKLOADS.names())
    for spec in WORKLOADS:
        findings += check_workload_image(spec)
    findings += check_dockerfile(REPO / TEMPLATE)
    for stack in STACKS:
        findings += check_dockerfile(REPO / stack.dockerfile)
        findings += check_lock(REPO / stack.lock, REPO / stack.requirements_in)
    for finding in findings:
        print(finding, file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
