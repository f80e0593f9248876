"""An OpenSSH server on localhost for the tests that reach a Docker engine over ssh:// (Debian's openssh-server).

Everything is throwaway and in one temporary folder: a host key, a client key, the authorized_keys file, the
config, and a HOME for the client side whose .ssh/ holds the client key (as id_ed25519) and the server's host key
(known_hosts): the docker SDK's ssh transport (paramiko) reads both from $HOME/.ssh, and refuses unknown hosts. The
server runs as this user (root: sshd needs it) on a free port of 127.0.0.1, and gives each session DOCKER_HOST so
the `docker system dial-stdio` the SDK runs there reaches the tests' engine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def missing() -> str | None:
    """Why no server can start here, or None."""
    if not Path(SSHD).exists():
        return "sshd not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen not installed (apt-get install openssh-client)"
    if os.geteuid() != 0:
        return "sshd must run as root"
    if shutil.which("docker") is None:
        return "the docker CLI is not installed (the SDK runs `docker system dial-stdio` over ssh)"
    return None


@dataclass
class Sshd:
    work: Path
    port: int
    process: subprocess.Popen

    @property
    def home(self) -> Path:
        """HOME for a client: its .ssh/ has the key and knows this server."""
        return self.work / "home"

    def url(self) -> str:
        return f"ssh://{os.environ.get('USER', 'root')}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   capture_output=True)
    return (path.with_suffix(".pub")).read_text().strip()


def start(docker_host: str | None, timeout: float = 30.0) -> Sshd:
    work = Path(tempfile.mkdtemp(prefix="gpubench-sshd-"))
    ssh = work / "home" / ".ssh"
    ssh.mkdir(parents=True, mode=0o700)
    host_key = _keygen(work / "host_key")
    client_key = _keygen(ssh / "id_ed25519")
    (work / "authorized_keys").write_text(client_key + "\n")
    port = _free_port()
    (ssh / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key.split()[:2])}\n")
    config = [f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {work / 'host_key'}",
              f"AuthorizedKeysFile {work / 'authorized_keys'}", "StrictModes no", "UsePAM no",
              "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
              f"PidFile {work / 'sshd.pid'}", "LogLevel ERROR"]
    if docker_host:
        config.append(f"SetEnv DOCKER_HOST={docker_host}")
    (work / "sshd_config").write_text("\n".join(config) + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation folder
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(work / "sshd_config")], stdout=subprocess.DEVNULL,
                               stderr=open(work / "sshd.log", "w"))  # noqa: SIM115
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(work / 'sshd.log').read_text()[-500:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return Sshd(work, port, process)
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("sshd did not listen in time")
