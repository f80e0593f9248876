"""Does a Hugging Face hub serve the model here? Asked quickly, in a separate process.

The question is the request snapshot_download starts with (GET {endpoint}/api/models/{repo}/revision/main,
HF_ENDPOINT or huggingface.co, through the proxy variables urllib honours, with HF_TOKEN if set), and the
answer must be the model's JSON with its commit: a gateway that accepts every connection and answers 404
(as some sandboxes do) is no hub. It runs in a child process so the cold-start worker, which times
`import huggingface_hub` itself, has loaded neither ssl nor http.client before its timer, and so the
whole question, name lookup included, ends at the timeout. HF_HUB_OFFLINE set means no, without asking.
"""

from __future__ import annotations

import os
import subprocess
import sys

DEFAULT_ENDPOINT = "https://huggingface.co"
_TRUE = {"1", "on", "yes", "true"}

_ASK = r"""
import json, os, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"User-Agent": "gpubench-cold-start"})
if os.environ.get("HF_TOKEN"):
    request.add_header("Authorization", "Bearer " + os.environ["HF_TOKEN"])
try:
    with urllib.request.urlopen(request, timeout=float(sys.argv[2])) as answer:
        body = json.loads(answer.read())
    print("ok" if isinstance(body, dict) and body.get("sha") else "the answer has no commit sha")
except urllib.error.HTTPError as exc:
    print(f"HTTP {exc.code}")
except Exception as exc:
    reason = getattr(exc, "reason", exc)
    print(f"{type(reason).__name__}: {reason}")
"""


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or DEFAULT_ENDPOINT


def model_url(repo_id: str) -> str:
    return f"{endpoint()}/api/models/{repo_id}/revision/main"


def unreachable_reason(repo_id: str, timeout_s: float) -> str | None:
    """None when the hub answers with the model's commit within `timeout_s`, else why not (one line)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return "HF_HUB_OFFLINE is set"
    url = model_url(repo_id)
    try:
        child = subprocess.run([sys.executable, "-I", "-c", _ASK, url, str(timeout_s)], capture_output=True,
                               text=True, timeout=timeout_s + 1)
    except subprocess.TimeoutExpired:
        return f"no hub reachable: {url} did not answer within {timeout_s:g} s"
    answer = (child.stdout.strip().splitlines() or [f"the check exited with code {child.returncode}"])[-1]
    return None if answer == "ok" else f"no hub reachable: {url}: {answer}"
