"""Whether a hub serves the model here: decided within the timeout, by asking for the model's commit."""

import json
import socket
import time

import local_http
import pytest

from gpubench.workloads.cold_start import hub

REPO = "Qwen/Qwen2.5-7B-Instruct"


class _Answers(local_http.QuietHandler):
    """/api/models/<REPO>/revision/main gives the model's JSON; anything else 404 (as a sandbox gateway does)."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == f"/api/models/{REPO}/revision/main":
            self.answer(200, json.dumps({"id": REPO, "sha": "0" * 40}).encode())
        else:
            self.answer(404, b"not found")


@pytest.fixture
def server():
    with local_http.serving(_Answers) as url:
        yield url


@pytest.fixture(autouse=True)
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


def test_a_hub_that_serves_the_model_is_reachable(server, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server + "/")
    assert hub.unreachable_reason(REPO, 5) is None


def test_a_server_that_answers_404_is_no_hub(server, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server)
    reason = hub.unreachable_reason("someone/else", 5)
    assert reason == f"no hub reachable: {server}/api/models/someone/else/revision/main: HTTP 404"


def test_a_refused_connection_is_unreachable_with_the_address(monkeypatch):
    with socket.socket() as closed:  # bound, never listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        reason = hub.unreachable_reason(REPO, 5)
    assert reason.startswith(f"no hub reachable: http://127.0.0.1:{port}/api/models/") and "refused" in reason


def test_a_hub_that_never_answers_is_decided_within_the_timeout(monkeypatch):
    with socket.socket() as silent:  # listening, so connections open, but nothing ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        started = time.monotonic()
        reason = hub.unreachable_reason(REPO, 1)
        took = time.monotonic() - started
    assert reason.startswith("no hub reachable") and "timed out" in reason and took < 2.5


def test_offline_mode_is_unreachable_without_asking(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")
    assert hub.unreachable_reason(REPO, 5) == "HF_HUB_OFFLINE is set"


def test_the_default_endpoint_is_the_hub(monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub.model_url(REPO) == f"https://huggingface.co/api/models/{REPO}/revision/main"
