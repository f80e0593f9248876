"""Code uploads: a tar.gz PUT (without auth) to a URL on the fake, unpacked for the job."""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .wire import ApiError, iso, utc_now

MAX_UPLOAD_BYTES = 1024**3


@dataclass
class Upload:
    id: str
    sha256: str
    size: int
    token: str
    expires_at: datetime
    data: bytes | None = None
    used: bool = False

    def json(self, base_url: str) -> dict[str, Any]:
        url = None if self.used else f"{base_url}/uploads/{self.token}"
        return {
            "upload_id": self.id,
            "url": url,
            "url_expires_at": None if url is None else iso(utc_now() + timedelta(hours=1)),
            "expires_at": iso(self.expires_at),
            "max_bytes": MAX_UPLOAD_BYTES,
        }


class UploadStore:
    def __init__(self, base_url: Callable[[], str]) -> None:
        self._base_url = base_url
        self._by_id: dict[str, Upload] = {}
        self._lock = threading.Lock()

    def create(self, size: int, sha256: str | None) -> dict[str, Any]:
        with self._lock:
            upload = next((u for u in self._by_id.values() if sha256 and u.sha256 == sha256), None)
            if upload is None:
                upload = Upload(
                    id=f"upl_{secrets.token_hex(8)}",
                    sha256=sha256 or "",
                    size=size,
                    token=secrets.token_urlsafe(16),
                    expires_at=utc_now() + timedelta(hours=24),
                )
                self._by_id[upload.id] = upload
            return upload.json(self._base_url())

    def put(self, token: str, data: bytes) -> None:
        with self._lock:
            upload = next((u for u in self._by_id.values() if u.token == token), None)
            if upload is None:
                raise ApiError(404, "not_found", "no such upload URL")
            if upload.sha256 and hashlib.sha256(data).hexdigest() != upload.sha256:
                raise ApiError(400, "checksum_mismatch", "the body does not match the upload's sha256")
            upload.data = data

    def get(self, upload_id: str) -> Upload | None:
        with self._lock:
            return self._by_id.get(upload_id)

    def mark_used(self, upload_id: str) -> None:
        with self._lock:
            if upload_id in self._by_id:
                self._by_id[upload_id].used = True
