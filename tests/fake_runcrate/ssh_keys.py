"""The workspace's SSH public keys (camelCase on the wire, like the real API)."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncssh

from .wire import ApiError, conflict, iso, not_found, utc_now


@dataclass
class RegisteredKey:
    id: str
    name: str
    public_key: str
    key: asyncssh.SSHKey
    type: str
    created_at: datetime = field(default_factory=utc_now)
    last_used: datetime | None = None

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "fingerprint": self.key.get_fingerprint("sha256"),
            "type": self.type,
            "createdAt": iso(self.created_at),
            "lastUsed": iso(self.last_used),
            "projectId": "proj_fake",
        }

    def matches(self, offered: asyncssh.SSHKey) -> bool:
        return offered.public_data == self.key.public_data


class SshKeyStore:
    def __init__(self) -> None:
        self.keys: dict[str, RegisteredKey] = {}
        self._lock = threading.Lock()

    def create(self, body: dict[str, Any]) -> RegisteredKey:
        name, public_key = body.get("name"), body.get("public_key")
        if not isinstance(name, str) or not name:
            raise ApiError(422, "validation_error", "name: is required", {"field": "name"})
        if not isinstance(public_key, str):
            raise ApiError(422, "validation_error", "public_key: is required", {"field": "public_key"})
        try:
            key = asyncssh.import_public_key(public_key.strip())
        except (asyncssh.KeyImportError, ValueError):
            raise ApiError(422, "validation_error", "public_key: not an OpenSSH public key",
                           {"field": "public_key"}) from None
        with self._lock:
            if any(existing.matches(key) for existing in self.keys.values()):
                raise conflict("This SSH key is already registered", reason="duplicate_key")
            registered = RegisteredKey(
                id=f"key_{secrets.token_hex(8)}",
                name=name,
                public_key=public_key.strip(),
                key=key,
                type=body.get("type") or key.get_algorithm(),
            )
            self.keys[registered.id] = registered
            return registered

    def get(self, key_id: str) -> RegisteredKey | None:
        with self._lock:
            return self.keys.get(key_id)

    def delete(self, key_id: str) -> None:
        with self._lock:
            if self.keys.pop(key_id, None) is None:
                raise not_found("ssh key", key_id)

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            return [k.json() for k in self.keys.values()]
