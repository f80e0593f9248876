"""A job's outputs: the files under its ``$RUNCRATE_OUTPUT_DIR``, served through signed URLs."""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Artifact:
    path: str
    local: Path
    size: int
    sha256: str

    def json(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.size, "sha256": self.sha256}


def collect_artifacts(outputs: Path) -> dict[str, Artifact]:
    found: dict[str, Artifact] = {}
    if not outputs.is_dir():
        return found
    for local in sorted(outputs.rglob("*")):
        if local.is_file() and not local.is_symlink():
            relative = local.relative_to(outputs).as_posix()
            data = local.read_bytes()
            found[relative] = Artifact(relative, local, len(data), hashlib.sha256(data).hexdigest())
    return found


class SignedUrls:
    """Tokens standing for one artifact each, served without the API key."""

    def __init__(self) -> None:
        self._targets: dict[str, Artifact] = {}
        self._lock = threading.Lock()

    def sign(self, artifact: Artifact) -> str:
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._targets[token] = artifact
        return f"/signed/{token}"

    def resolve(self, token: str) -> Artifact | None:
        with self._lock:
            return self._targets.get(token)

    def forget(self, artifacts: list[Artifact]) -> None:
        with self._lock:
            for token in [t for t, a in self._targets.items() if a in artifacts]:
                del self._targets[token]
