"""Result stores: a local run folder always, and optionally an S3-compatible bucket.

Every run writes to a local folder first (`<results-dir>/<run-id>/`): `results.jsonl` (the records),
`config.json` (what ran, how, where), `run.log` (everything else that was printed). With an S3 store
the folder is uploaded at the end; if that fails, `upload.json` in the folder says where it should
go and `gpubench upload` sends it later. Uploads are idempotent (an object whose stored sha256
matches is skipped) and verified (Content-MD5 on the way in, ETag and sha256 read back).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

from pydantic import BaseModel

from gpubench.schema import to_line

DEFAULT_RESULTS_DIR = "gpubench-results"
RECORDS_FILE, CONFIG_FILE, LOG_FILE, UPLOAD_FILE = "results.jsonl", "config.json", "run.log", "upload.json"


class StoreError(Exception):
    """A store that cannot be used; str() is a one-line, user-facing message without secrets."""


class RunDir:
    """The local folder of one run. Records go to stdout and results.jsonl; chatter to run.log."""

    def __init__(self, path: Path, echo: IO[str] | None = None):
        self.path = path
        self._echo = echo if echo is not None else sys.stdout
        self._lock = threading.Lock()
        self._records = open(path / RECORDS_FILE, "a", encoding="utf-8")  # noqa: SIM115
        self._log = open(path / LOG_FILE, "a", encoding="utf-8")  # noqa: SIM115

    @classmethod
    def create(cls, results_dir: str | os.PathLike, run_id: str, echo: IO[str] | None = None) -> RunDir:
        root = Path(results_dir)
        try:
            root.mkdir(parents=True, exist_ok=True)
            path = root / run_id
            path.mkdir()
        except FileExistsError:
            raise StoreError(f"run folder {path} already exists") from None
        except OSError as exc:
            raise StoreError(f"cannot write results under {root}: {exc.strerror or exc}") from None
        return cls(path, echo)

    def write_config(self, config: dict) -> None:
        (self.path / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")

    def record(self, record: BaseModel) -> None:
        self.record_line(to_line(record))

    def record_line(self, line: str) -> None:
        with self._lock:
            self._records.write(line + "\n")
            self._records.flush()
            if self._echo:
                self._echo.write(line + "\n")
                self._echo.flush()

    def log(self, line: str) -> None:
        with self._lock:
            self._log.write(line.rstrip("\n") + "\n")
            self._log.flush()

    def close(self) -> None:
        self._records.close()
        self._log.close()


def check_local_dir(results_dir: str | os.PathLike) -> None:
    """Fail early, before anything runs, when the results folder cannot be written."""
    root = Path(results_dir)
    if root.exists() and not root.is_dir():
        raise StoreError(f"results folder {root} is a file, not a folder")
    probe_dir = root
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir() or not os.access(probe_dir, os.W_OK | os.X_OK):
        raise StoreError(f"results folder {root} is not writable")


@dataclass(frozen=True)
class S3Store:
    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, run_id: str, name: str) -> str:
        return "/".join(p for p in (self.prefix, run_id, name) if p)

    def client(self):
        import boto3
        from botocore.config import Config

        session = boto3.session.Session()
        if session.get_credentials() is None:
            raise StoreError(
                f"no S3 credentials for {self.url}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
            )
        # Checksums only where the API needs them: S3-compatible servers differ on the newer ones.
        config = Config(
            request_checksum_calculation="when_required", response_checksum_validation="when_required",
            retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10, read_timeout=60,
        )
        return session.client("s3", config=config)

    def check_writable(self, run_id: str) -> None:
        """Put and remove a marker object, so a refusing store is found before any GPU time is spent."""
        client = self.client()
        key = self.key(run_id, ".write-check")
        try:
            client.put_object(Bucket=self.bucket, Key=key, Body=b"")
        except Exception as exc:  # botocore raises many unrelated types; all mean "cannot write"
            raise StoreError(f"cannot write to {self.url}: {_describe(exc)}") from None
        # A store may allow put without delete; a leftover marker is harmless.
        with contextlib.suppress(Exception):
            client.delete_object(Bucket=self.bucket, Key=key)

    def upload_run(self, run_dir: Path) -> dict[str, str]:
        """Upload every file of a run folder; returns {key: sha256}. Raises StoreError on failure."""
        client = self.client()
        run_id = run_dir.name
        uploaded = {}
        for path in sorted(p for p in run_dir.iterdir() if p.is_file() and p.name != UPLOAD_FILE):
            data = path.read_bytes()
            if path.name == RECORDS_FILE and not data:
                continue  # a launch that never ran (no GPU): no records; an empty file would read as a broken run
            key = self.key(run_id, path.name)
            sha256 = hashlib.sha256(data).hexdigest()
            md5 = hashlib.md5(data).digest()  # noqa: S324 - S3's integrity check, not security
            try:
                if _stored_sha256(client, self.bucket, key) != sha256:
                    client.put_object(
                        Bucket=self.bucket, Key=key, Body=data, ContentMD5=base64.b64encode(md5).decode(),
                        Metadata={"sha256": sha256}, ContentType=_content_type(path.name),
                    )
                    head = client.head_object(Bucket=self.bucket, Key=key)
                    etag = head.get("ETag", "").strip('"')
                    if head.get("Metadata", {}).get("sha256") != sha256 or ("-" not in etag and etag != md5.hex()):
                        raise StoreError(f"upload of {key} to {self.url} did not verify")
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"upload to {self.url} failed: {_describe(exc)}") from None
            uploaded[key] = sha256
        return uploaded


def _stored_sha256(client, bucket: str, key: str) -> str | None:
    from botocore.exceptions import ClientError

    try:
        return client.head_object(Bucket=bucket, Key=key).get("Metadata", {}).get("sha256")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


def _content_type(name: str) -> str:
    return {".jsonl": "application/x-ndjson", ".json": "application/json"}.get(Path(name).suffix, "text/plain")


def _describe(exc: Exception) -> str:
    """A one-line reason from a boto/botocore error, never including credentials."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        err = response["Error"]
        return f"{err.get('Code', 'error')}: {err.get('Message', '')}".strip().rstrip(":")
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def parse_store(url: str | None) -> S3Store | None:
    """None for the local default; an S3Store for s3://bucket[/prefix]; StoreError otherwise."""
    if url is None or url in ("", "local"):
        return None
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise StoreError(f"bad store URL {url!r}: use s3://bucket/prefix, or leave --store out for the local folder")
    if parsed.params or parsed.query or parsed.fragment or "@" in parsed.netloc:
        raise StoreError(f"bad store URL {url!r}: use s3://bucket/prefix")
    return S3Store(bucket=parsed.netloc, prefix=parsed.path.strip("/"))


def mark_pending(run_dir: Path, store: S3Store, reason: str) -> None:
    (run_dir / UPLOAD_FILE).write_text(json.dumps({"store": store.url, "status": "pending", "reason": reason}) + "\n")


def mark_done(run_dir: Path, store: S3Store, objects: dict[str, str]) -> None:
    (run_dir / UPLOAD_FILE).write_text(
        json.dumps({"store": store.url, "status": "done", "objects": objects}, indent=2) + "\n"
    )


def upload_state(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / UPLOAD_FILE).read_text())
    except (OSError, ValueError):
        return None


def deliver(run_dir: Path, store: S3Store) -> tuple[bool, str]:
    """Upload a run folder, recording the outcome in upload.json. Returns (ok, one-line message)."""
    try:
        objects = store.upload_run(run_dir)
    except StoreError as exc:
        mark_pending(run_dir, store, str(exc))
        return False, f"{exc}; kept {run_dir} (send it later with: gpubench upload {run_dir})"
    mark_done(run_dir, store, objects)
    return True, f"uploaded {len(objects)} files to {store.url}/{run_dir.name}/"
