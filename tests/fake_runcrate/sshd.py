"""Per-instance SSH servers (asyncssh) on loopback ports, all on one event loop thread.

Each accepts user ``root`` with the instance's registered public key only, runs exec and shell
requests with bash in the instance's home directory, and serves SFTP/scp with relative paths
taken from that directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import posixpath
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from .process import command_environment, kill_group

_BLOCK = 65536


@dataclass
class SshTarget:
    """What one instance's sshd serves."""

    machine_id: str
    home: Path
    env: dict[str, str]
    accepts: Callable[[asyncssh.SSHKey], bool]
    process_groups: set[int] = field(default_factory=set)
    """Process groups its sessions started (killed when the instance goes away)."""


@dataclass
class _Listener:
    acceptor: asyncssh.SSHAcceptor
    connections: set[asyncssh.SSHServerConnection]


class SshHub:
    def __init__(self) -> None:
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._listeners: dict[int, _Listener] = {}
        self._lock = threading.Lock()

    @property
    def host_public_key(self) -> str:
        return self.host_key.export_public_key().decode().strip()

    def serve(self, target: SshTarget) -> int:
        """Starts an sshd for ``target``; its port."""
        return self._call(self._listen(target))

    def close(self, port: int) -> None:
        if self._loop is not None:
            self._call(self._close(port))

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

    def _call(self, coroutine):
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="fake-runcrate-sshd",
                                                daemon=True)
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=15)

    async def _listen(self, target: SshTarget) -> int:
        connections: set[asyncssh.SSHServerConnection] = set()
        acceptor = await asyncssh.create_server(
            functools.partial(_Gate, target, connections),
            "127.0.0.1",
            0,
            server_host_keys=[self.host_key],
            process_factory=functools.partial(_run_session, target),
            sftp_factory=functools.partial(_HomeSftpServer, home=target.home),
            allow_scp=True,
            encoding=None,
            line_editor=False,
            agent_forwarding=False,
            x11_forwarding=False,
        )
        port = acceptor.get_port()
        self._listeners[port] = _Listener(acceptor, connections)
        return port

    async def _close(self, port: int) -> None:
        listener = self._listeners.pop(port, None)
        if listener is None:
            return
        listener.acceptor.close()
        for connection in list(listener.connections):
            connection.close()
        await listener.acceptor.wait_closed()
        for connection in list(listener.connections):
            await connection.wait_closed()

    async def _shutdown(self) -> None:
        for port in list(self._listeners):
            await self._close(port)
        current = asyncio.current_task()
        pending = [task for task in asyncio.all_tasks() if task is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


class _Gate(asyncssh.SSHServer):
    """Public-key auth for root with the instance's key; nothing else."""

    def __init__(self, target: SshTarget, connections: set[asyncssh.SSHServerConnection]) -> None:
        self._target = target
        self._connections = connections
        self._connection: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._connection = conn
        self._connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self._connection)

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return username == "root" and self._target.accepts(key)


class _HomeSftpServer(asyncssh.SFTPServer):
    """SFTP on the local filesystem, with relative paths starting at the instance's home."""

    def __init__(self, chan: asyncssh.SSHServerChannel, *, home: Path) -> None:
        super().__init__(chan)
        self._home = str(home).encode()

    def map_path(self, path: bytes) -> bytes:
        return path if path.startswith(b"/") else posixpath.join(self._home, path)


async def _run_session(target: SshTarget, session: asyncssh.SSHServerProcess) -> None:
    """An exec (``bash -c command``) or a shell (bash reading stdin) in the instance's home."""
    argv = ["bash", "-c", session.command] if session.command is not None else ["bash"]
    env = command_environment({
        **target.env,
        "HOME": str(target.home),
        "USER": "root",
        "LOGNAME": "root",
        "SHELL": "/bin/bash",
    }, machine_id=target.machine_id)
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=target.home,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    target.process_groups.add(process.pid)
    feeder = asyncio.create_task(_feed(session.stdin, process.stdin))
    try:
        await asyncio.gather(_relay(process.stdout, session.stdout), _relay(process.stderr, session.stderr))
        returncode = await process.wait()
    finally:
        feeder.cancel()
        if process.returncode is None:
            kill_group(process.pid)
            await process.wait()
    with contextlib.suppress(OSError, asyncssh.Error):
        session.exit(128 - returncode if returncode < 0 else returncode)


async def _feed(source: asyncssh.SSHReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(_BLOCK):
            sink.write(data)
            await sink.drain()
    except (OSError, asyncssh.Error):
        pass
    finally:
        sink.close()


async def _relay(source: asyncio.StreamReader, sink: asyncssh.SSHWriter) -> None:
    while data := await source.read(_BLOCK):
        # If the client went away, keep draining so the command is not blocked on a full pipe.
        with contextlib.suppress(OSError, asyncssh.Error):
            sink.write(data)
