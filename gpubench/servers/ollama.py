"""An Ollama server (`ollama serve`) with a study's settings, its model pull timed through the API.

Settings are Ollama's environment variables (OLLAMA_NUM_PARALLEL, OLLAMA_CONTEXT_LENGTH,
OLLAMA_KEEP_ALIVE), the models live in OLLAMA_MODELS (the cache volume in the images). Ready when
/api/version answers; the OpenAI-compatible API is under /v1.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass

from gpubench.servers.process import ManagedServer, ServerFailed, http_get


@dataclass(frozen=True)
class OllamaSettings:
    num_parallel: int = 16
    context_length: int = 4096
    keep_alive: str = "-1"  # never unload: load time is paid once, by the first request
    models_dir: str = ""  # OLLAMA_MODELS; empty: Ollama's default (~/.ollama/models)

    def env(self) -> dict[str, str]:
        env = {"OLLAMA_NUM_PARALLEL": str(self.num_parallel), "OLLAMA_CONTEXT_LENGTH": str(self.context_length),
               "OLLAMA_KEEP_ALIVE": self.keep_alive}
        if self.models_dir:
            env["OLLAMA_MODELS"] = self.models_dir
        return env


@dataclass
class Pull:
    seconds: float
    bytes: int  # the layers' sizes as the registry announced them (0 when already present)
    status: str


class OllamaServer(ManagedServer):
    name = "Ollama"
    can_empty_cache = False

    def __init__(self, settings: OllamaSettings, log_path, binary: str = "ollama", ready_timeout_s: float = 120.0,
                 port: int | None = None):
        super().__init__(log_path, port=port)
        self.settings = settings
        self.binary = binary
        self.ready_timeout_s = ready_timeout_s

    def argv(self) -> list[str]:
        return [self.binary, "serve"]

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.settings.env(), "OLLAMA_HOST": f"{self.host}:{self.port}"}

    @property
    def ready_url(self) -> str:
        return f"{self.root_url}/api/version"

    def version(self) -> str | None:
        status, body = http_get(self.ready_url)
        return json.loads(body).get("version") if status == 200 else None

    def _post(self, path: str, payload: dict, timeout: float):
        request = urllib.request.Request(f"{self.root_url}{path}", data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        return urllib.request.urlopen(request, timeout=timeout)

    def pull(self, tag: str, progress=None, timeout: float = 3600.0) -> Pull:
        """`ollama pull` through POST /api/pull, streamed; seconds from the request to its `success`."""
        started = time.perf_counter()
        sizes: dict[str, int] = {}
        status = ""
        with self._post("/api/pull", {"model": tag, "name": tag, "stream": True}, timeout) as response:
            for line in response:
                if not line.strip():
                    continue
                event = json.loads(line)
                if "error" in event:
                    raise ServerFailed(f"ollama pull {tag}: {event['error']}")
                status = event.get("status", status)
                if event.get("digest") and event.get("total"):
                    sizes[event["digest"]] = int(event["total"])
                    if progress:
                        progress("pull", done=int(event.get("completed") or 0), total=int(event["total"]),
                                 message=f"{tag} {event['digest'][:19]}")
        if status != "success":
            raise ServerFailed(f"ollama pull {tag} ended without success (last status {status!r})")
        return Pull(seconds=time.perf_counter() - started, bytes=sum(sizes.values()), status=status)

    def load(self, tag: str, timeout: float = 600.0) -> float:
        """Load the model into memory (a generate request with no prompt); seconds until it answered."""
        started = time.perf_counter()
        keep_alive = self.settings.keep_alive
        # The API reads a number as seconds (negative: forever) and a string as a Go duration ("5m").
        payload = {"model": tag, "keep_alive": int(keep_alive) if keep_alive.lstrip("-").isdigit() else keep_alive}
        with self._post("/api/generate", payload, timeout) as response:
            answer = json.loads(response.read() or b"{}")
        if "error" in answer:
            raise ServerFailed(f"ollama could not load {tag}: {answer['error']}")
        return time.perf_counter() - started

    def counters(self) -> dict[str, float]:
        return {}  # Ollama serves no token counters

    def empty_prompt_cache(self) -> str:
        return "not reset: Ollama has no call that empties its slots' prompt cache"

    def loaded(self) -> list[dict]:
        """/api/ps: the models in memory, with `size` and `size_vram` in bytes."""
        status, body = http_get(f"{self.root_url}/api/ps")
        if status != 200:
            raise ServerFailed(f"ollama /api/ps answered {status}")
        return json.loads(body).get("models", [])
