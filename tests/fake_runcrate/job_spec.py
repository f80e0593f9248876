"""A job submit body, checked field by field like the API checks it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from . import validation as check
from .catalogue import canonical_gpu, known_gpus, placement
from .uploads import UploadStore
from .wire import ApiError, invalid

MAX_COMMAND_BYTES = 64 * 1024
RETRY_ON = {"machine_failure", "nonzero_exit"}
WEBHOOK_EVENTS = {"started", "finished"}
_CANDIDATE = re.compile(r"(?P<name>[^:]+?)\s*(?::\s*(?P<count>\d+))?")


@dataclass(frozen=True)
class GpuChoice:
    gpu_type: str
    gpu_count: int

    def json(self) -> dict[str, Any]:
        return {"gpu_type": self.gpu_type, "gpu_count": self.gpu_count}


@dataclass
class JobSpec:
    body: dict[str, Any]
    """The checked body, env values included: what a rerun starts from."""
    command: str
    candidates: list[GpuChoice]
    max_runtime_minutes: int
    name: str | None
    image: str | None
    template: str | None
    env: dict[str, str]
    storage_id: str | None
    region: str | None
    capacity_wait_minutes: int
    max_retries: int
    retry_on: list[str]
    retry_exit_codes: list[int]
    tags: dict[str, str]
    webhook_url: str | None
    webhook_events: list[str]
    code: dict[str, Any] | None
    image_registry_auth: dict[str, Any] | None
    allow_cpu_container: bool

    @property
    def code_upload_id(self) -> str | None:
        return (self.code or {}).get("upload_id")


def parse_job_spec(body: dict[str, Any], types: list[dict[str, Any]], uploads: UploadStore) -> JobSpec:
    default_count = check.integer(body, "gpu_count", 1, 8, default=1)
    region = check.text(body, "region")
    candidates = _gpu_candidates(check.required(body, "gpu_type"), default_count, types)
    if not any(placement(types, c.gpu_type, c.gpu_count, region) for c in candidates):
        raise invalid("region", f"none of the requested GPUs is offered in {region!r}")
    webhook_url = check.text(body, "webhook_url")
    if webhook_url is not None and urlsplit(webhook_url).scheme != "https":
        raise invalid("webhook_url", "must be an https URL")
    command = check.text(body, "command", max_bytes=MAX_COMMAND_BYTES)
    if not command:
        raise invalid("command", "is required")
    return JobSpec(
        body=body,
        command=command,
        candidates=candidates,
        max_runtime_minutes=check.integer(body, "max_runtime_minutes", 1, 10080),
        name=check.text(body, "name"),
        image=check.text(body, "image"),
        template=check.text(body, "template"),
        env=check.string_map(body, "env"),
        storage_id=check.text(body, "storage_id"),
        region=region,
        capacity_wait_minutes=check.integer(body, "capacity_wait_minutes", 0, 1440, default=30),
        max_retries=check.integer(body, "max_retries", 0, 10, default=0),
        retry_on=check.choices(body, "retry_on", RETRY_ON),
        retry_exit_codes=check.integers(body, "retry_exit_codes"),
        tags=check.string_map(body, "tags"),
        webhook_url=webhook_url,
        webhook_events=check.choices(body, "webhook_events", WEBHOOK_EVENTS),
        code=_code(check.mapping(body, "code"), uploads),
        image_registry_auth=check.mapping(body, "image_registry_auth"),
        allow_cpu_container=check.flag(body, "allow_cpu_container"),
    )


def _gpu_candidates(value: Any, default_count: int, types: list[dict[str, Any]]) -> list[GpuChoice]:
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list) or not entries or not all(isinstance(e, str) for e in entries):
        raise invalid("gpu_type", "must be a GPU name or a non-empty list of them")
    candidates: list[GpuChoice] = []
    unknown: list[str] = []
    for entry in entries:
        match = _CANDIDATE.fullmatch(entry.strip())
        if match is None:
            raise invalid("gpu_type", f"cannot read {entry!r}")
        name = canonical_gpu(match["name"], types)
        if name is None:
            unknown.append(match["name"])
            continue
        count = int(match["count"]) if match["count"] else default_count
        if not 1 <= count <= 8:
            raise invalid("gpu_type", f"{entry!r}: the GPU count must be between 1 and 8")
        candidates.append(GpuChoice(name, count))
    if unknown:
        raise ApiError(
            422,
            "validation_error",
            f"gpu_type: unknown GPU type(s) {', '.join(unknown)}",
            {"field": "gpu_type", "unknown": unknown, "known": known_gpus(types)},
        )
    return candidates


def _code(code: dict[str, Any] | None, uploads: UploadStore) -> dict[str, Any] | None:
    """The code as the job echoes it back."""
    if code is None:
        return None
    if "upload_id" in code:
        upload = uploads.get(code["upload_id"])
        if upload is None or upload.data is None:
            raise invalid("code.upload_id", f"no finished upload {code['upload_id']!r}")
        return {"source": "upload", "upload_id": upload.id, "ref": upload.id, "sha256": upload.sha256}
    git = code.get("git")
    if isinstance(git, dict) and isinstance(git.get("url"), str) and git["url"].startswith("https://"):
        return {"source": "git", "url": git["url"], "ref": git.get("ref"), "commit": None}
    raise invalid("code", 'must be {"upload_id": ...} or {"git": {"url": "https://...", ...}}')
