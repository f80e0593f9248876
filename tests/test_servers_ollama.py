"""OllamaServer (gpubench/servers/ollama.py) against a stand-in `ollama` executable.

Ollama's binary cannot be installed here, so the manager is tested against a small Python program
named `ollama` that implements what the manager and the client use: `ollama serve` on $OLLAMA_HOST,
/api/version, a streamed /api/pull, /api/generate (load), /api/ps, and a streamed OpenAI
/v1/chat/completions with usage. What is real: the process handling (own group, environment, ready
wait, fail-fast, SIGINT stop), the pull timing through the streamed API, /api/ps reading, and the
ollama-vs-vllm workload's Ollama session and setups through the CLI. What is not: llama.cpp itself.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time

import pytest
from clirun import gpubench

from gpubench.servers.ollama import OllamaServer, OllamaSettings
from gpubench.servers.process import ServerFailed, group_members

STANDIN = r'''#!PYTHON
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

if sys.argv[1:] != ["serve"]:
    sys.exit("stand-in ollama: only `serve`")
if os.environ.get("STANDIN_FAIL"):
    print("Error: listen tcp: address already in use", flush=True)
    sys.exit(1)
with open(os.environ["STANDIN_ENV_FILE"], "w") as f:
    json.dump({k: v for k, v in os.environ.items() if k.startswith("OLLAMA_")}, f)
PULL_S = float(os.environ.get("STANDIN_PULL_S", "0.5"))
loaded = {}

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        print("request", *args, flush=True)
    def _json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def _body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
    def _chunked(self, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
    def do_GET(self):
        if self.path == "/api/version":
            return self._json(200, {"version": "0.0.0-standin"})
        if self.path == "/api/ps":
            return self._json(200, {"models": [{"name": t, "model": t, "size": 5_000_000_000,
                                                "size_vram": 4_700_000_000} for t in loaded]})
        self._json(404, {"error": "not found"})
    def do_POST(self):
        body = self._body()
        if self.path == "/api/pull":
            if body["model"].startswith("missing"):
                self._chunked("application/x-ndjson")
                self._chunk(b'{"status":"pulling manifest"}\n')
                self._chunk(b'{"error":"pull model manifest: file does not exist"}\n')
                return self._chunk(b"")
            self._chunked("application/x-ndjson")
            self._chunk(b'{"status":"pulling manifest"}\n')
            for step in range(1, 6):
                time.sleep(PULL_S / 5)
                event = {"status": "pulling abc", "digest": "sha256:abc", "total": 4_700_000_000,
                         "completed": 940_000_000 * step}
                self._chunk(json.dumps(event).encode() + b"\n")
            self._chunk(b'{"status":"success"}\n')
            return self._chunk(b"")
        if self.path == "/api/generate":
            loaded[body["model"]] = body.get("keep_alive")
            return self._json(200, {"model": body["model"], "done": True, "done_reason": "load"})
        if self.path == "/v1/chat/completions":
            n = body.get("max_tokens", 16)
            self._chunked("text/event-stream")
            for i in range(n):
                text = "#### 18" if i == n - 1 else "w "
                chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
                self._chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            usage = {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": 30 + n}}
            self._chunk(b"data: " + json.dumps(usage).encode() + b"\n\n")
            self._chunk(b"data: [DONE]\n\n")
            return self._chunk(b"")
        self._json(404, {"error": "not found"})

host, port = os.environ["OLLAMA_HOST"].rsplit(":", 1)
ThreadingHTTPServer((host, int(port)), Handler).serve_forever()
'''


@pytest.fixture
def standin(tmp_path, monkeypatch):
    path = tmp_path / "bin" / "ollama"
    path.parent.mkdir()
    path.write_text(STANDIN.replace("PYTHON", sys.executable, 1))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("STANDIN_ENV_FILE", str(tmp_path / "env.json"))
    return path


def test_serve_with_the_study_settings_pull_timed_load_and_stop(standin, tmp_path):
    settings = OllamaSettings(num_parallel=16, context_length=4096, keep_alive="-1", models_dir=str(tmp_path / "m"))
    server = OllamaServer(settings, tmp_path / "ollama.log", binary=str(standin))
    server.start()
    try:
        env = json.loads((tmp_path / "env.json").read_text())
        assert env == {"OLLAMA_NUM_PARALLEL": "16", "OLLAMA_CONTEXT_LENGTH": "4096", "OLLAMA_KEEP_ALIVE": "-1",
                       "OLLAMA_MODELS": str(tmp_path / "m"), "OLLAMA_HOST": f"127.0.0.1:{server.port}"}
        assert server.version() == "0.0.0-standin"
        events = []
        pull = server.pull("qwen2.5:7b-instruct-q4_K_M", progress=lambda *a, **k: events.append(k))
        assert pull.status == "success" and pull.bytes == 4_700_000_000
        assert 0.5 <= pull.seconds < 5  # the stand-in streams its layer over 0.5 s
        assert events[-1]["done"] == events[-1]["total"] == 4_700_000_000
        assert server.load("qwen2.5:7b-instruct-q4_K_M") >= 0
        [model] = server.loaded()
        assert model["name"] == "qwen2.5:7b-instruct-q4_K_M" and model["size_vram"] == 4_700_000_000
        with pytest.raises(ServerFailed, match="file does not exist"):
            server.pull("missing:tag")
    finally:
        pgid = server.proc.pid
        server.stop()
    assert group_members(pgid) == [] and server.proc.returncode is not None


def test_a_server_that_exits_fails_fast_with_its_log(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_FAIL", "1")
    server = OllamaServer(OllamaSettings(), tmp_path / "ollama.log", binary=str(standin))
    started = time.perf_counter()
    with pytest.raises(ServerFailed, match="(?s)exited with code 1.*address already in use"):
        server.start()
    assert time.perf_counter() - started < 30


def test_workload_ollama_setups_through_the_cli(standin, tmp_path):
    """The workload's Ollama session: served, pulled and loaded once for its setups, then stopped."""
    result = gpubench("run", "ollama-vs-vllm", "--smoke", "--setups", "ollama-q4km-u1,ollama-q4km-u4,ollama-q4km-gsm8k",
                      "--set", f"ollama_bin={standin}", cwd=tmp_path,
                      env={"STANDIN_ENV_FILE": str(tmp_path / "env.json"), "STANDIN_PULL_S": "0.3"}, timeout=300)
    assert result.code == 0, result.stderr[-3000:]
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    assert [r["status"] for r in rows.values()] == ["ok"] * 3
    first, second = rows["ollama-q4km-u1"], rows["ollama-q4km-u4"]
    m = {k: v["value"] for k, v in first["metrics"].items()}
    assert m["pull_s"] >= 0.3 and m["pull_gb"] == 4.7 and m["model_vram_gib"] == pytest.approx(4.7e9 / 2**30)
    assert m["server_ready_s"] > 0 and "server_ready_s" not in second["metrics"]  # one server, reported once
    assert first["info"]["server_env"]["OLLAMA_NUM_PARALLEL"] == "16" and first["info"]["model_tag"].endswith("q4_K_M")
    # Streamed chat, one warm-up then the smoke's 6 requests, each 16 tokens as the server's usage says
    assert m["requests_ok"] == 6 and m["completion_tokens_mean"] == 16 and m["usage_mismatches"] == 0
    g = {k: v["value"] for k, v in rows["ollama-q4km-gsm8k"]["metrics"].items()}
    assert g["gsm8k_total"] == 4 and g["gsm8k_correct"] == sum(a[2] for a in rows["ollama-q4km-gsm8k"]["info"][
        "gsm8k_answers"])
    assert g["client_processes"] == 1 and g["client_bound"] == 0 and g["usage_mismatches"] == 0  # as every load's
    left = [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
            if str(standin) in line]
    assert left == []  # the session stopped its server
