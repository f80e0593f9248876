"""Who a server says it is, asked once before a load: GET /version (which vLLM answers) and the models list's
`owned_by` ("vllm", "sglang", "llamacpp"). What the load generator may ask of it follows: how it counts a chunk's
tokens (token_counts.py) and which of its /metrics gauges count the requests it runs and queues (server_gauges.py).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

from gpubench.loadgen import client

ASK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ServerId:
    kind: str | None  # "vllm", "sglang", "llamacpp", another owner as written, or None when it said nothing
    said: str | None  # in words, with the version where it gave one ("vllm 0.26.0")
    root: str  # the server's root URL (the base URL without /v1)


def root_of(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def identify(base_url: str) -> ServerId:
    root = root_of(base_url)
    version = _get_json(f"{root}/version")
    models = _get_json(f"{root}/v1/models")
    data = models.get("data") if isinstance(models, dict) else None
    owner = next((m["owned_by"] for m in data or [] if isinstance(m, dict) and isinstance(m.get("owned_by"), str)
                  and m["owned_by"]), None)
    if isinstance(version, dict) and isinstance(version.get("version"), str) and owner in (None, "vllm"):
        return ServerId("vllm", f"vllm {version['version']}", root)
    if owner is None:
        return ServerId(None, None, root)
    return ServerId(owner.lower().replace(".", "").replace("-", "").replace("_", ""), owner, root)


def _get_json(url: str):
    headers = {k: v for k, v in client.headers().items() if k != "Content-Type"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=ASK_TIMEOUT_S) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None
