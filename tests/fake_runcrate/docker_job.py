"""A job's command run in its image on the local Docker engine, when the engine has that image.

As a container platform runs a job: ``bash -c COMMAND`` in place of the image's entrypoint, in
``/workspace`` (``/workspace/code`` with code), the job's env over the image's (never the host's),
``RUNCRATE_OUTPUT_DIR=/workspace/outputs``. The attempt's workspace is bind-mounted at /workspace,
so artifacts are collected as for a bash job; host networking lets the job reach whatever the
test serves on loopback (SeaweedFS, the fake itself). Output is read as the engine records it,
stdout and stderr in one stream; a stop is SIGTERM, a grace, then SIGKILL, and the container (and
its anonymous volumes) is removed in every path. Containers carry ``LABEL`` (the fake's workspace
root) and ``LABEL.job`` (the job id), so a test can find any left behind.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from .process import OutputSink

LABEL = "io.gpubench.fake-runcrate"
WORKSPACE = "/workspace"
STOP_GRACE_S = 5
_ENGINE_LOST = 255  # the engine stopped answering about the container: the machine is gone


def start_in_image(
    image: str | None,
    command: str,
    workspace: Path,
    cwd: Path,
    env: Mapping[str, str],
    sink: OutputSink,
    labels: Mapping[str, str],
) -> ContainerProcess | None:
    """The command started in a container of ``image``; None when there is no engine or it lacks the image."""
    if not image:
        return None
    try:
        import docker
    except ImportError:
        return None
    try:
        client = docker.from_env(timeout=60)
    except (docker.errors.DockerException, OSError):
        return None
    try:
        client.images.get(image)
    except (docker.errors.DockerException, OSError):
        client.close()
        return None
    _writable_by_anyone(workspace)  # the image's user is not this process's
    try:
        container = client.containers.create(
            image,
            entrypoint=["bash", "-c"],
            command=[command],
            working_dir=str(PurePosixPath(WORKSPACE, cwd.relative_to(workspace).as_posix())),
            environment={**env, "RUNCRATE_OUTPUT_DIR": f"{WORKSPACE}/outputs"},
            volumes={str(workspace): {"bind": WORKSPACE, "mode": "rw"}},
            network_mode="host",
            labels=dict(labels),
        )
    except BaseException:
        client.close()
        raise
    return ContainerProcess(client, container, sink)


class ContainerProcess:
    """A started container, shaped like ``BashProcess`` for the job runner: exit_code, wait, finish."""

    def __init__(self, client, container, sink: OutputSink) -> None:
        self._client = client
        self._container = container
        self._exit_code: int | None = None
        self._exited = threading.Event()
        try:
            container.start()
        except BaseException:
            self._remove()
            raise
        self._reader = threading.Thread(target=self._pump, args=(sink,), daemon=True)
        self._reader.start()
        threading.Thread(target=self._wait_for_exit, daemon=True).start()

    @property
    def exit_code(self) -> int | None:
        return self._exit_code

    def wait(self, timeout_s: float | None = None) -> int | None:
        """The exit code, or None if still running after ``timeout_s``."""
        self._exited.wait(timeout_s)
        return self._exit_code

    def finish(self) -> int:
        """Stop the container if it still runs (SIGTERM, grace, SIGKILL), drain its output, remove it; the exit code."""
        import docker

        try:
            if not self._exited.is_set():
                with contextlib.suppress(docker.errors.DockerException, OSError):
                    self._container.stop(timeout=STOP_GRACE_S)
            self._exited.wait(STOP_GRACE_S + 60)  # a safety net: the engine answers the wait once it stopped
            self._reader.join(timeout=30)
        finally:
            self._remove()
        return self._exit_code if self._exit_code is not None else _ENGINE_LOST

    def _remove(self) -> None:
        import docker

        try:
            with contextlib.suppress(docker.errors.NotFound):
                self._container.remove(force=True, v=True)
        finally:
            self._client.close()

    def _wait_for_exit(self) -> None:
        import docker

        try:
            self._exit_code = int(self._container.wait()["StatusCode"])
        except (docker.errors.DockerException, OSError):
            self._exit_code = _ENGINE_LOST
        finally:
            self._exited.set()

    def _pump(self, sink: OutputSink) -> None:
        """The engine's log of the container, stdout and stderr as they were written, until it exits."""
        import docker

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with contextlib.suppress(docker.errors.DockerException, OSError):
            for data in self._container.logs(stream=True, follow=True, stdout=True, stderr=True):
                text = decoder.decode(data)
                if text:
                    sink(text)
        tail = decoder.decode(b"", final=True)
        if tail:
            sink(tail)


def _writable_by_anyone(workspace: Path) -> None:
    for folder, _, _ in os.walk(workspace):
        os.chmod(folder, 0o777)
