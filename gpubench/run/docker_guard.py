"""`python -m gpubench.run.docker_guard CONTAINER_ID STOP_TIMEOUT_S`: stop and remove a container if its owner dies.

`gpubench run --docker` starts this in its own session (so a signal to its process group does not reach it) with a
pipe on stdin that only the owner holds open. The owner writes "done" once it removed the container itself; an
end-of-file without it means the owner died (SIGKILL, the OOM killer) and nobody reads the container's output or
will remove it, so this does. Imports nothing heavy until it has to act.
"""

from __future__ import annotations

import contextlib
import signal
import sys


def main(argv: list[str]) -> int:
    container_id, stop_timeout = argv[0], int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the owner's to handle
    if sys.stdin.buffer.read().startswith(b"done"):
        return 0
    import docker

    client = docker.from_env(timeout=stop_timeout + 60)
    try:
        container = client.containers.get(container_id)
        with contextlib.suppress(docker.errors.DockerException):
            container.stop(timeout=stop_timeout)
        container.remove(force=True, v=True)  # v: its anonymous volumes, as `docker run --rm`
    except docker.errors.NotFound:
        pass
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
