"""A real Docker engine for the `gpubench run --docker` tests, and a small image that stands in for the pinned one.

The pinned images (images/*/Dockerfile) need a registry and CUDA; this machine has neither. The stand-in is built
locally in three cached steps, each keyed by a hash of what it holds, so a rerun reuses them:

1. base: Debian bookworm (its python3 is 3.11, like the host's CPU torch wheel) from `debootstrap --variant=minbase`,
   `docker import`ed; the rootfs tarball is kept under /var/tmp/gpubench-docker-base for a fresh engine.
2. deps: the host venv's own versions of gpubench's runtime closure (torch, transformers, ...) as wheels
   (`pip download --no-deps` on the host, which reaches the index), installed in /opt/venv with `--no-index` by a
   container that mounts the wheel folder, then committed (no 400 MB build context to send).
3. the image: tests/docker/Dockerfile adds the project's wheel, the GPUBENCH_IMAGE* identity and ENTRYPOINT gpubench.

Without an engine (or debootstrap, or the index), `stand_in_image` skips the test with the reason printed.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GPUBENCH_DOCKER_TEST_CACHE", "/var/tmp/gpubench-docker-base"))
SUITE, MIRROR = "bookworm", "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv")
RUNTIME_ROOTS = ("gpubench", "torch", "transformers")  # the container runs train-compile --smoke
PROJECT_PATHS = ("pyproject.toml", "setup.py", "README.md", "gpubench", "workloads", "launcher")
IMAGE_NAME = "gpubench-test/train-compile"  # not ghcr.io/gpubench/...: a test image must never pass for a pinned one
LABEL = "io.gpubench"


def _say(text: str) -> None:
    print(f"[docker-engine] {text}", file=sys.stderr, flush=True)


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def engine_or_reason():
    """(client, None) when an engine answers; (None, why not) otherwise."""
    try:
        import docker
    except ImportError:
        return None, "the docker Python package is not installed"
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        return None, f"no Docker engine answers ({type(exc).__name__}: {str(exc)[:160]})"
    return client, None


# ---- step 1: the base rootfs -------------------------------------------------------------------------------------

def base_image(client) -> str:
    tag = f"gpubench-test-base:{_key(SUITE, MIRROR, BASE_PACKAGES, 'minbase')}"
    if _has_image(client, tag):
        return tag
    tarball = CACHE / f"{tag.split(':')[1]}.rootfs.tar"
    if not tarball.is_file():
        _debootstrap(tarball)
    _say(f"docker import {tarball} {tag}")
    repository, version = tag.split(":")
    with open(tarball, "rb") as data:
        client.api.import_image_from_data(data, repository=repository, tag=version)
    return tag


def _debootstrap(tarball: Path) -> None:
    if not shutil.which("debootstrap"):
        pytest.skip("debootstrap is not installed: cannot make the test image's base (apt-get install debootstrap)")
    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        root = Path(work) / "rootfs"
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(root), MIRROR]
        _say(" ".join(cmd))
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"debootstrap failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-300:]}")
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        partial = tarball.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], check=True)
        partial.rename(tarball)
    _say(f"base rootfs in {time.monotonic() - started:.0f}s")


def _has_image(client, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


# ---- step 2: the runtime dependencies ----------------------------------------------------------------------------

def runtime_pins(roots=RUNTIME_ROOTS) -> list[str]:
    """name==version for everything the roots need at run time, as installed in this venv (the project itself aside)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins, todo = {}, list(roots)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in pins:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not needed on this platform (the host runs without it too)
        pins[name] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    pins.pop("gpubench")
    return sorted(f"{name}=={version}" for name, version in pins.items())


def deps_image(client, base: str, pins: list[str], wheels: Future) -> str:
    tag = f"gpubench-test-deps:{_key(base, pins)}"
    if _has_image(client, tag):
        return tag
    wheels = wheels.result()
    started = time.monotonic()
    _say(f"installing {len(pins)} wheels into {tag}")
    script = ("set -e; python3 -m venv /opt/venv; /opt/venv/bin/pip install -q --no-index --no-deps"
              " --disable-pip-version-check /wheels/*.whl; rm -rf /root/.cache")
    container = client.containers.create(base, ["sh", "-c", script], volumes={str(wheels): {"bind": "/wheels",
                                                                                             "mode": "ro"}})
    try:
        container.start()
        code = container.wait()["StatusCode"]
        if code != 0:
            raise RuntimeError(f"installing the wheels failed ({code}): {container.logs()[-2000:].decode()}")
        repository, version = tag.split(":")
        container.commit(repository=repository, tag=version)
    finally:
        _remove_in_background(container)
    _say(f"deps image in {time.monotonic() - started:.0f}s")
    return tag


def _remove_in_background(container) -> None:
    """Deleting the install container's 1 GB layer takes a while: the tests run meanwhile; the session waits at exit."""
    def remove() -> None:
        import docker

        client = docker.from_env(timeout=600)  # its own: the caller closes the one it was given
        try:
            client.api.remove_container(container.id, force=True, v=True)
        finally:
            client.close()

    remover = threading.Thread(target=remove, daemon=True)
    remover.start()
    atexit.register(remover.join)


def _wheels(pins: list[str]) -> Path:
    folder = CACHE / f"wheels-{_key(pins)}"
    if (folder / "complete").is_file():
        return folder
    partial = folder.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    started = time.monotonic()
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(partial),
           *pins]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"pip download of the image's wheels failed: {done.stderr.strip()[-400:]}")
    (partial / "complete").write_text("\n".join(pins) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    _say(f"downloaded {len(pins)} wheels in {time.monotonic() - started:.0f}s")
    return folder


# ---- step 3: the project, the image's identity, the entrypoint ---------------------------------------------------

def project_image(client, deps: str) -> dict[str, str]:
    """The stand-in image; returns its tag and the GPUBENCH_IMAGE* values it carries."""
    import docker

    source_key = _source_key()
    version = f"test-{_key(deps, source_key, (REPO / 'tests/docker/Dockerfile').read_text())}"
    tag = f"{IMAGE_NAME}:{version}"
    identity = {"GPUBENCH_IMAGE": IMAGE_NAME, "GPUBENCH_IMAGE_VERSION": version, "GPUBENCH_GIT_COMMIT": source_key}
    if _has_image(client, tag):
        return {"tag": tag, **identity}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as context:
        _project_wheel(Path(context))
        shutil.copy(REPO / "tests/docker/Dockerfile", Path(context) / "Dockerfile")
        try:
            client.images.build(path=context, tag=tag, rm=True, forcerm=True,
                                buildargs={"DEPS_IMAGE": deps, **identity})
        except docker.errors.BuildError as exc:
            log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
            raise RuntimeError(f"building {tag} failed: {log[-2000:]}") from None
    _say(f"built {tag} in {time.monotonic() - started:.0f}s")
    for old in client.images.list(name=IMAGE_NAME):  # earlier working trees' images: only the newest is used
        if tag not in old.tags:
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(old.id, force=True)
    return {"tag": tag, **identity}


def _source_key() -> str:
    digest = hashlib.sha256()
    for top in PROJECT_PATHS:
        path = REPO / top
        files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
            if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _project_wheel(context: Path) -> None:
    """A wheel of the working tree, built from a copy so no build/ or egg-info lands in the repository."""
    with tempfile.TemporaryDirectory() as work:
        src = Path(work) / "src"
        src.mkdir()
        for top in PROJECT_PATHS:
            path = REPO / top
            if path.is_dir():
                shutil.copytree(path, src / top, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(path, src / top)
        # Build isolation: a fresh venv's setuptools may predate pyproject's (license = "SPDX" needs 77+).
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(context), str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building gpubench's wheel failed: {done.stderr.strip()[-1000:]}")


# ---- what the tests use --------------------------------------------------------------------------------------------

@functools.cache
def stand_in_image() -> dict[str, str]:
    """Build (or reuse) the stand-in image; skip with the reason printed where no engine can run it."""
    client, reason = engine_or_reason()
    if client is None:
        print(f"\nSKIP docker engine tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    try:
        pins = runtime_pins()
        with ThreadPoolExecutor(1) as pool:
            wheels = pool.submit(_wheels, pins)  # downloads while debootstrap does: both mostly wait on the network
            deps = deps_image(client, base_image(client), pins, wheels)
        return project_image(client, deps)
    finally:
        client.close()


def gpubench_containers(client, **labels: str) -> list:
    """Every container (running or not) carrying gpubench's label, and the given label values (run_id=...)."""
    wanted = [LABEL] + [f"{LABEL}.{key.replace('_', '-')}={value}" for key, value in labels.items()]
    return client.containers.list(all=True, filters={"label": wanted})


def new_run_id() -> str:
    return f"train-compile-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def docker_args(image: dict[str, str], *extra: str, gpus: str | None = "none") -> list[str]:
    """`gpubench run train-compile --smoke --docker` on the stand-in image, one CPU setup."""
    args = ["run", "train-compile", "--smoke", "--setups", "eager-sdpa", "--docker", "--image", image["tag"], *extra]
    return [*args, "--gpus", gpus] if gpus else args


@functools.cache
def smoke_run() -> dict:
    """One successful docker run, shared by the tests that look at what it left (run once per session)."""
    from clirun import gpubench

    image = stand_in_image()
    cwd = Path(tempfile.mkdtemp(prefix="gpubench-docker-smoke-"))
    run_id, volume = new_run_id(), unique_name("gpubench-test-cache")
    atexit.register(_remove_volume, volume)
    started = time.time()
    result = gpubench(*docker_args(image, "--cache-volume", volume), cwd=cwd, env={"GPUBENCH_RUN_ID": run_id})
    return {"image": image, "cwd": cwd, "run_id": run_id, "volume": volume, "result": result,
            "started": started, "ended": time.time() + 1}


def _remove_volume(name: str) -> None:
    client, _ = engine_or_reason()
    if client is not None:
        with contextlib.suppress(Exception):
            client.volumes.get(name).remove(force=True)
        client.close()


def start_gpubench(args: list[str], cwd: Path, run_id: str) -> subprocess.Popen:
    """gpubench in the background, as a user's shell would start it; output goes to files in cwd."""
    from clirun import BIN, as_foreground_job, base_env

    # faulthandler: a SIGABRT from a test that waited too long writes every thread's stack to stderr.txt
    env = base_env({"GPUBENCH_RUN_ID": run_id, "PYTHONFAULTHANDLER": "1"})
    return subprocess.Popen([str(BIN / "gpubench"), *args], cwd=cwd, env=env, preexec_fn=as_foreground_job,
                            stdout=open(cwd / "stdout.txt", "w"), stderr=open(cwd / "stderr.txt", "w"))  # noqa: SIM115


def wait_for_first_setup(proc: subprocess.Popen, run_folder: Path, timeout: float = 600) -> None:
    """Until the run inside the container has started its first setup (a progress record came through)."""
    deadline = time.monotonic() + timeout
    records = run_folder / "results.jsonl"
    while time.monotonic() < deadline:
        if records.is_file() and '"phase":"setup"' in records.read_text().replace(" ", ""):
            return
        if proc.poll() is not None:
            raise AssertionError(f"gpubench exited with {proc.returncode} before its first setup")
        time.sleep(0.2)
    raise AssertionError(f"no setup started within {timeout}s")


def wait_until_gone(client, run_id: str, timeout: float = 180) -> list:
    """The run's containers still there after `timeout` (none, when the cleanup works)."""
    deadline = time.monotonic() + timeout
    while (left := gpubench_containers(client, run_id=run_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
