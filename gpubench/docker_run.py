"""`gpubench run <workload> --docker`: run a workload's image on this machine's GPUs through the Docker SDK.

The container runs `gpubench <args>` (the image's entrypoint) with the GPUs requested, the cache volume
mounted at /cache, and its stdout and stderr streamed line by line to the caller, who feeds stdout into
the same record handling as a plain run.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections.abc import Callable, Iterable

from gpubench import __version__
from gpubench.catalog import WorkloadSpec
from gpubench.images import CACHE_DIR, HF_HOME
from gpubench.ingest import LineAssembler

LABEL = "io.gpubench"
STOP_TIMEOUT_S = 10


class DockerUnavailable(Exception):
    """No Docker engine (or no GPU support in it) to run the image; str() is one line for the user."""

    def __init__(self, reason: str, hint: str = "run without --docker to use this Python environment"):
        self.reason, self.hint = _one_line(reason), hint
        super().__init__(f"{self.reason}; {hint}")


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _docker():
    try:
        import docker
    except ImportError:
        raise DockerUnavailable("the docker Python package is not installed (pip install 'gpubench[docker]')") \
            from None
    return docker


def device_requests(gpus: str | int | None) -> list:
    """gpus: "all", a count ("2"), or device indexes/UUIDs ("0,2"); None asks for no GPU."""
    if gpus is None:
        return []
    from docker.types import DeviceRequest

    text = str(gpus).strip().removeprefix("device=")
    if text == "all":
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if text.isdigit():
        return [DeviceRequest(count=int(text), capabilities=[["gpu"]])]
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise ValueError(f"gpus={gpus!r}: expected 'all', a count, or device ids like '0,1'")
    return [DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]


def container_spec(spec: WorkloadSpec, args: list[str], *, image: str, cache_volume: str, env: dict[str, str],
                   gpus: str | None = "all") -> dict:
    """Keyword arguments for docker's client.containers.create(...) (or .run(..., detach=True))."""
    from docker.types import Ulimit

    return {
        "image": image,
        "command": [str(a) for a in args],  # the entrypoint is `gpubench`
        "device_requests": device_requests(gpus),
        "volumes": {cache_volume: {"bind": CACHE_DIR, "mode": "rw"}},
        "environment": {**env, "HF_HOME": HF_HOME, "PYTHONUNBUFFERED": "1"},
        # torch's DataLoader workers and NCCL talk through /dev/shm, which is 64 MB in a default container.
        "ipc_mode": "host",
        "ulimits": [Ulimit(name="memlock", soft=-1, hard=-1), Ulimit(name="stack", soft=67108864, hard=67108864)],
        "init": True,  # reaps the servers a workload starts (vllm, ollama) and forwards the stop signal
        # Removed by run_in_docker once its exit code is read: auto_remove could race the wait for it.
        "auto_remove": False,
        "labels": {LABEL: "1", f"{LABEL}.workload": spec.name, f"{LABEL}.version": __version__},
        "tty": False,
        "stdin_open": False,
    }


def connect():
    """A client for the engine DOCKER_HOST (or the default socket) names, or DockerUnavailable."""
    docker = _docker()
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise DockerUnavailable(f"no Docker engine reachable at {where} ({_reason(exc)})") from None
    return client


def _reason(exc: BaseException) -> str:
    """The innermost cause, which names the socket and the refusal rather than the HTTP library."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    return _one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, 160)


def ensure_image(client, image: str, say: Callable[[str], None]) -> None:
    docker = _docker()
    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    say(f"[gpubench] pulling {image}")
    try:
        client.images.pull(image)
    except docker.errors.APIError as exc:
        raise DockerUnavailable(f"cannot pull {image} ({exc.explanation or exc})",
                                "build it with docker buildx bake (images/_layers/docker-bake.hcl) or pass --image"
                                ) from None


def pump(chunks: Iterable[tuple[bytes | None, bytes | None]], on_stdout_line, on_stderr_line) -> None:
    """Demultiplexed (stdout, stderr) chunks from the engine, as lines to the two callbacks."""
    streams = [_DecodedLines(on_stdout_line), _DecodedLines(on_stderr_line)]
    for pair in chunks:
        for stream, chunk in zip(streams, pair, strict=True):
            stream.feed(chunk)
    for stream in streams:
        stream.close()


class _DecodedLines:
    """Engine bytes in (a UTF-8 character may straddle two chunks), whole lines without the CR out."""

    def __init__(self, emit: Callable[[str], None]):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines = LineAssembler(lambda line: emit(line.rstrip("\r")))

    def feed(self, chunk: bytes | None) -> None:
        if chunk:
            self._lines.feed(self._decoder.decode(chunk))

    def close(self) -> None:
        self._lines.feed(self._decoder.decode(b"", final=True))
        self._lines.flush()


def run_in_docker(spec: WorkloadSpec, args: list[str], *, image: str, cache_volume: str, env: dict[str, str],
                  gpus: str | None = "all", on_stdout_line: Callable[[str], None],
                  on_stderr_line: Callable[[str], None]) -> int:
    """Run the image to completion; returns the container's exit code. Ctrl-C stops the container."""
    docker = _docker()
    client = connect()
    try:
        ensure_image(client, image, on_stderr_line)
        kwargs = container_spec(spec, args, image=image, cache_volume=cache_volume, env=env, gpus=gpus)
        container = client.containers.create(**kwargs)
        try:
            # Attached before the start, so no early line is missed however fast the container exits.
            chunks = client.api.attach(container.id, stdout=True, stderr=True, stream=True, logs=True, demux=True)
            try:
                container.start()
            except docker.errors.APIError as exc:
                if "gpu" in str(exc).lower():
                    raise DockerUnavailable(f"the Docker engine cannot give this container GPUs "
                                            f"({exc.explanation or exc})",
                                            "install the NVIDIA Container Toolkit, or run without --docker") from None
                raise
            pump(chunks, on_stdout_line, on_stderr_line)
            return int(container.wait().get("StatusCode", 1))
        except KeyboardInterrupt:
            on_stderr_line(f"[gpubench] interrupted: stopping container {container.short_id}")
            with contextlib.suppress(docker.errors.DockerException):
                container.stop(timeout=STOP_TIMEOUT_S)
            raise
        finally:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
    finally:
        client.close()
