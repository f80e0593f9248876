"""`gpubench run <workload> --docker`: run a workload's image on this machine through the Docker SDK.

The container runs `gpubench <args>` (the image's entrypoint) with the GPUs asked for (`--gpus`), the cache volume
mounted at /cache, and its stdout and stderr streamed line by line to the caller, who feeds stdout into the same
record handling as a plain run. When it exits, the files of its own run folder that the stream does not carry
(config.json with the environment, summary.md, summary.csv) are copied next to the streamed records, so the run
folder is the one a plain run leaves.

No container outlives the `gpubench` that started it, however that ends:
- it exits, or fails to set up: the container is removed once its exit code is read (or its start failed);
- Ctrl-C: Ctrl-C is passed on (SIGINT) so the run inside records `interrupted`; if it has not exited after
  STOP_TIMEOUT_S (or on a second Ctrl-C) it is stopped, then removed;
- it is killed (SIGKILL, OOM killer): a guard process (gpubench.run.docker_guard), started in its own session before the
  container starts, holds the read end of a pipe only this `gpubench` writes to; the pipe's end-of-file without
  "done" means its owner died, and the guard stops and removes the container;
- both killed (kill -9 of every process, a reboot): each container carries its owner (host, boot id, pid, the pid's
  start time) in a label, and the next `gpubench run --docker` on this host stops and removes those whose owner is
  gone.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from gpubench import __version__
from gpubench.catalog import WorkloadSpec
from gpubench.images import CACHE_DIR, HF_HOME
from gpubench.run.ingest import LineAssembler
from gpubench.run_args import RunArgs

LABEL = "io.gpubench"
OWNER_LABEL = f"{LABEL}.owner"  # host/boot id/pid/start time of the gpubench that started the container
STOP_TIMEOUT_S = 10
# Where the run inside writes its folder; read back with get_archive before the container is removed.
RESULTS_IN_CONTAINER = "/tmp/gpubench-results"
STREAMED_FILES = ("results.jsonl", "run.log")  # the host writes these from the stream itself
GPUS_HELP = "all, none, a count (2), device ids (0,2, device=0 or device=GPU-<uuid>), capabilities=compute,utility"
NO_GPU_HINT = "use --gpus none to run on the CPU in the container, or install the NVIDIA Container Toolkit"


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


# Docker's --gpus (docker/cli opts/gpus.go): comma-separated fields, "all" or a count, device=<ids>, capabilities=<list>
# (the NVIDIA runtime's driver capabilities); `docker run --gpus '"device=0,2"'` quotes a list, which is optional here.
GPU_ID = re.compile(r"\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9A-Za-z/-]+")  # an index, a GPU UUID or a MIG device
CAPABILITIES = ("compute", "utility", "graphics", "video", "display", "compat32", "all", "gpu")


def parse_gpus(gpus: str | int | None) -> str | None:
    """The --gpus value, checked before anything runs and normalised: "all", a count ("2"), "device=<ids>", each
    optionally with ",capabilities=<list>"; None for "none". Anything else is a ValueError naming what is wrong."""
    text = str(gpus if gpus is not None else "none").strip()
    if text == "none":
        return None
    count, ids, capabilities = _gpu_request(gpus, text)
    parts = [count] if count else [f"device={','.join(ids)}"]
    if capabilities:
        parts.append(f"capabilities={','.join(capabilities)}")
    return ",".join(parts)


def _gpu_request(given, text: str) -> tuple[str | None, list[str], list[str]]:
    """(count: "all" or N, device ids, capabilities) of a --gpus value. A field with no key continues the list the
    field before it began (device=0,2 is ids 0 and 2), else is "all", a count, or a device id."""
    def bad(why: str) -> ValueError:
        return ValueError(f"--gpus {given!r}: {why}; expected {GPUS_HELP}")

    try:
        fields = [field.strip() for field in next(csv.reader([text], skipinitialspace=True))]
    except (csv.Error, StopIteration):
        raise bad("not a list of fields") from None
    count, ids, capabilities, listing, named_ids = None, [], [], None, False
    for field in fields:
        key, has_key, value = field.partition("=")
        if has_key:
            key, value = key.strip(), value.strip()
            if key not in ("count", "device", "capabilities"):
                raise bad(f"unknown key {key!r}")
            listing = {"device": ids, "capabilities": capabilities}.get(key)
            named_ids = named_ids or key == "device"
            if key == "count":
                count = value
                continue
            if listing:
                raise bad(f"{key} given twice")
            listing.extend(part.strip() for part in value.split(",") if part.strip())
            if not listing:
                raise bad(f"{key}= with nothing after it")
        elif listing is not None and field:
            listing.append(field)
        elif field:
            ids.append(field)
    if count is None and not named_ids and len(ids) == 1 and (ids[0] == "all" or ids[0].isdigit()):
        count, ids = ids[0], []  # a lone "all" or number is a count, as in `docker run --gpus 2`
    if count is None and not ids and capabilities:
        count = "1"  # capabilities alone: one GPU, as docker's CLI reads it
    if "all" in ids:
        raise bad("all and other GPUs together")
    if count is not None:
        if ids:
            raise bad("a count and device ids together")
        if count != "all" and not count.isdigit():
            raise bad(f"count {count!r} is not all or a whole number")
        if count != "all" and int(count) == 0:
            raise ValueError("--gpus 0 asks for no GPU: say --gpus none, or --gpus device=0 for the first GPU")
        count = count if count == "all" else str(int(count))
    elif not ids:
        raise bad("no GPU named")
    wrong = [i for i in ids if not GPU_ID.fullmatch(i)]
    if wrong:
        raise bad(f"{wrong[0]!r} is not a GPU index, GPU-<uuid> or MIG-<uuid>")
    unknown = [c for c in capabilities if c not in CAPABILITIES]
    if unknown:
        raise bad(f"unknown capability {unknown[0]!r} (known: {', '.join(CAPABILITIES)})")
    return count, ids, capabilities


def device_requests(gpus: str | int | None) -> list:
    """The engine's device requests for a --gpus value (parse_gpus); none for "none"."""
    text = parse_gpus(gpus)
    if text is None:
        return []
    from docker.types import DeviceRequest

    count, ids, capabilities = _gpu_request(gpus, text)
    wanted = [[*capabilities, "gpu"] if "gpu" not in capabilities else capabilities]  # as docker's CLI asks
    if count:
        return [DeviceRequest(count=-1 if count == "all" else int(count), capabilities=wanted)]
    return [DeviceRequest(device_ids=ids, capabilities=wanted)]


def container_spec(spec: WorkloadSpec, args: RunArgs, *, image: str, cache_volume: str, env: dict[str, str],
                   gpus: str | None = "all", command: list[str] | None = None, entrypoint: list[str] | None = None,
                   labels: dict[str, str] | None = None, owned: bool = True) -> dict:
    """Keyword arguments for docker's client.containers.create(...) (or .run(..., detach=True)).

    command: the arguments of the image's entrypoint (`gpubench`), else `args`' own; entrypoint: another one. labels:
    more labels. owned: the container is this process's (its owner label: a later `gpubench run --docker` removes it
    once this process is gone); `gpubench-launch --docker-host` leaves it out, so a later call can follow it again."""
    from docker.types import Ulimit

    labels = {LABEL: "1", f"{LABEL}.workload": spec.name, f"{LABEL}.version": __version__, **(labels or {})}
    if owned:
        labels[OWNER_LABEL] = owner()
    if args.run_id:
        labels[f"{LABEL}.run-id"] = args.run_id
    extra = {"entrypoint": entrypoint} if entrypoint else {}
    return {
        "image": image,
        "command": args.to_argv() if command is None else command,  # the entrypoint is `gpubench`
        **extra,
        "device_requests": device_requests(gpus),
        "volumes": {cache_volume: {"bind": CACHE_DIR, "mode": "rw"}},
        "environment": {**env, "HF_HOME": HF_HOME, "PYTHONUNBUFFERED": "1",
                        "GPUBENCH_RESULTS_DIR": RESULTS_IN_CONTAINER},
        # torch's DataLoader workers and NCCL talk through /dev/shm, which is 64 MB in a default container.
        "ipc_mode": "host",
        "ulimits": [Ulimit(name="memlock", soft=-1, hard=-1), Ulimit(name="stack", soft=67108864, hard=67108864)],
        "init": True,  # reaps the servers a workload starts (vllm, ollama) and passes signals on to gpubench
        # Removed by run_in_docker once its exit code is read: auto_remove could race the wait for it.
        "auto_remove": False,
        "labels": labels,
        "tty": False,
        "stdin_open": False,
    }


def connect(timeout: float | None = 60, url: str | None = None):
    """A client for the engine `url` names (unix://..., ssh://user@host, tcp://...), else DOCKER_HOST (or the default
    socket), or DockerUnavailable.

    timeout=None for a client that streams output: the SDK's attach keeps the socket timeout, and a workload may be
    silent for minutes (a model loading, a graph compiling)."""
    docker = _docker()
    try:
        client = docker.DockerClient(base_url=url, timeout=timeout) if url else docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        where = url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        if "paramiko" in str(exc):
            raise DockerUnavailable(f"{where}: reaching a Docker engine over ssh:// needs paramiko (pip install"
                                    " 'gpubench[docker]')") from None
        raise DockerUnavailable(f"no Docker engine reachable at {where} ({_reason(exc)})") from None
    except _ssh_errors() as exc:  # an ssh:// engine: paramiko's own (refused, an unknown host key, no key)
        where = url or os.environ.get("DOCKER_HOST")
        raise DockerUnavailable(f"no Docker engine reachable at {where} ({_reason(exc)})") from None
    return client


def _ssh_errors() -> tuple[type[BaseException], ...]:
    try:
        from paramiko import SSHException
    except ImportError:
        return (OSError, EOFError)
    return (OSError, EOFError, SSHException)


def _reason(exc: BaseException) -> str:
    """The innermost cause, which names the socket and the refusal rather than the HTTP library."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    return _one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, 160)


def ensure_image(client, image: str, say: Callable[[str], None]):
    """The image, pulled when the engine lacks it."""
    docker = _docker()
    try:
        return client.images.get(image)
    except docker.errors.ImageNotFound:
        pass
    say(f"[gpubench] pulling {image}")
    try:
        return client.images.pull(image)
    except docker.errors.APIError as exc:
        raise DockerUnavailable(f"cannot pull {image} ({exc.explanation or exc})",
                                "build it with tools/build_images.sh (a clone of the repository) or pass --image"
                                ) from None


def image_digest(image) -> str:
    """The image's identity as the engine knows it: its registry digest when pulled, else its local id."""
    return (image.attrs.get("RepoDigests") or [image.id])[0]


def no_gpu_error(client, exc) -> DockerUnavailable:
    """The engine could not give the container GPUs: one line that says why and what to do."""
    docker = _docker()
    try:
        runtimes = client.info().get("Runtimes") or {}
    except docker.errors.DockerException:
        runtimes = {}
    if "nvidia" not in runtimes:
        return DockerUnavailable("this Docker engine has no GPU runtime (nvidia)", NO_GPU_HINT)
    return DockerUnavailable(f"the Docker engine cannot give this container GPUs ({exc.explanation or exc})",
                             NO_GPU_HINT)


def owner(pid: int | None = None) -> str:
    """Who started a container, precisely enough to tell later whether that process still runs."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}/{_boot_id()}/{pid}/{_start_time(pid)}"


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return "unknown"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot: a pid reused by another process has another."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def is_orphan(label: str) -> bool:
    """A container started on this host by a gpubench that is gone (a boot ago, or killed with its guard)."""
    host, _, rest = label.partition("/")
    boot_id, _, rest = rest.partition("/")
    pid, _, start_time = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit() or "unknown" in (boot_id, _boot_id()) or start_time == "None":
        return False  # another machine's on a shared engine, or a host without /proc: not ours to judge
    return boot_id != _boot_id() or _start_time(int(pid)) != start_time


def reap_orphans(client, say: Callable[[str], None]) -> None:
    """Containers whose gpubench died and whose guard could not act (killed too, a reboot): stop and remove them."""
    docker = _docker()
    for container in client.containers.list(all=True, filters={"label": [LABEL, OWNER_LABEL]}):
        if is_orphan(container.labels.get(OWNER_LABEL, "")):
            say(f"[gpubench] removing container {container.short_id} ({container.status}): the gpubench that"
                f" started it is gone")
            with contextlib.suppress(docker.errors.DockerException):
                container.stop(timeout=STOP_TIMEOUT_S)
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True, v=True)


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


class Guard:
    """A process that stops and removes the container if this one dies without saying it is done (see top)."""

    def __init__(self, container_id: str):
        # -P: the installed gpubench, not a source tree in the working directory (as the runner's workers do).
        self._proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "gpubench.run.docker_guard", container_id, str(STOP_TIMEOUT_S)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def done(self) -> None:
        """The container is gone: the guard exits without touching the engine."""
        with contextlib.suppress(OSError):
            self._proc.stdin.write(b"done\n")
            self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)


class _Output(threading.Thread):
    """Pumps the container's output on its own thread, so Ctrl-C reaches the main thread while lines keep coming."""

    def __init__(self, chunks, on_stdout_line, on_stderr_line):
        super().__init__(daemon=True, name="docker-output")
        self._args = (chunks, on_stdout_line, on_stderr_line)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            pump(*self._args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self.error = exc

    def wait(self, seconds: float | None = None) -> bool:
        """True once all output is read (the container exited), False when `seconds` passed first."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while self.is_alive() and (deadline is None or time.monotonic() < deadline):
            self.join(0.2)
        if self.error is not None:
            raise self.error
        return not self.is_alive()


def run_in_docker(spec: WorkloadSpec, args: RunArgs, *, image: str, cache_volume: str, env: dict[str, str],
                  gpus: str | None = "all", on_stdout_line: Callable[[str], None],
                  on_stderr_line: Callable[[str], None], run_folder: Path | None = None) -> int:
    """Run the image to completion; returns the container's exit code. Ctrl-C is passed on to the run inside (then
    KeyboardInterrupt is raised here once the container is gone); no exit path leaves the container behind."""
    client = connect(timeout=None)
    try:
        reap_orphans(client, on_stderr_line)
        found = ensure_image(client, image, on_stderr_line)
        env = {"GPUBENCH_IMAGE_DIGEST": image_digest(found), **env}
        kwargs = container_spec(spec, args, image=image, cache_volume=cache_volume, env=env, gpus=gpus)
        streams = (on_stdout_line, on_stderr_line)
        try:
            return _run_container(client, kwargs, streams, run_folder)
        except _LimitRefused as exc:
            # An engine without CAP_SYS_RESOURCE (some VMs and sandboxes) cannot raise a hard limit: say so, run on.
            on_stderr_line(f"[gpubench] this Docker engine cannot raise the container's locked-memory limit ({exc});"
                           " running with the engine's default")
            kwargs["ulimits"] = [limit for limit in kwargs["ulimits"] if limit["Name"] != "memlock"]
            return _run_container(client, kwargs, streams, run_folder)
    finally:
        client.close()


class _LimitRefused(Exception):
    """The engine may not set a ulimit the container asked for."""


def _run_container(client, kwargs: dict, streams, run_folder: Path | None) -> int:
    docker = _docker()
    on_stdout_line, on_stderr_line = streams
    container = client.containers.create(**kwargs)
    guard = Guard(container.id)
    try:
        # Attached before the start, so no early line is missed however fast the container exits.
        chunks = client.api.attach(container.id, stdout=True, stderr=True, stream=True, logs=True, demux=True)
        try:
            container.start()
        except docker.errors.APIError as exc:
            explanation = _one_line(exc.explanation or exc)
            if "gpu" in explanation.lower():
                raise no_gpu_error(client, exc) from None
            if "rlimit" in explanation and any(limit["Name"] == "memlock" for limit in kwargs["ulimits"]):
                raise _LimitRefused(explanation) from None
            raise DockerUnavailable(f"the Docker engine could not start the container ({explanation})") from None
        output = _Output(chunks, on_stdout_line, on_stderr_line)
        output.start()
        try:
            output.wait()
        except KeyboardInterrupt:
            _interrupt(container, output, on_stderr_line)
            if run_folder is not None:
                copy_run_folder(container, run_folder, on_stderr_line)
            raise
        exit_code = int(container.wait().get("StatusCode", 1))
        if run_folder is not None:
            copy_run_folder(container, run_folder, on_stderr_line)
        return exit_code
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True, v=True)
        guard.done()


def _interrupt(container, output: _Output, say: Callable[[str], None]) -> None:
    """Ctrl-C: the run inside gets it too and records `interrupted`; a second Ctrl-C or a timeout stops it."""
    docker = _docker()
    say(f"[gpubench] interrupted: passing Ctrl-C to container {container.short_id}")
    with contextlib.suppress(docker.errors.DockerException):
        container.kill(signal="SIGINT")
    with contextlib.suppress(KeyboardInterrupt):
        if output.wait(STOP_TIMEOUT_S):
            return
    say(f"[gpubench] stopping container {container.short_id}")
    with contextlib.suppress(docker.errors.DockerException):
        container.stop(timeout=STOP_TIMEOUT_S)
    with contextlib.suppress(KeyboardInterrupt):
        output.wait(5)


def copy_run_folder(container, run_folder: Path, say: Callable[[str], None]) -> None:
    """The run folder's files the stream does not carry, from the (exited) container; config.json keeps how the
    host started it under "docker". Nothing to copy when the run inside never got as far as its folder."""
    docker = _docker()
    try:
        stream, _ = container.get_archive(RESULTS_IN_CONTAINER)
        data = b"".join(stream)
    except docker.errors.NotFound:
        return
    except docker.errors.DockerException as exc:
        say(f"[gpubench] could not copy the run folder out of the container: {_one_line(exc)}")
        return
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts  # gpubench-results/<run id>/<file>
            if not member.isfile() or len(parts) != 3 or parts[2] in STREAMED_FILES:
                continue
            content = archive.extractfile(member).read()
            if parts[2] == "config.json":
                content = _with_docker_facts(content, run_folder / "config.json")
            (run_folder / parts[2]).write_bytes(content)


def _with_docker_facts(inner: bytes, host_config: Path) -> bytes:
    config = json.loads(inner)
    with contextlib.suppress(OSError, ValueError):
        config["docker"] = json.loads(host_config.read_text())
    return (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()
