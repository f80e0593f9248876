"""A local OpenAI-compatible streaming server of known timing, for testing the load generator.

Run as its own process (`python tests/streaming_server.py --ttft-ms 200 --token-ms 20`), so its
timers do not share an event loop or a GIL with the client under test. It is plain asyncio, not
aiohttp.web: aiohttp's per-request work before a handler runs queued 64 requests that arrived
together by up to ~60 ms on a busy 2-core machine, so the timing "truth" would not have been known.
Every request streams:
  - chat: a role-only chunk at once (not a token), then one chunk per token;
  - completions: one chunk per token;
token k (0-based) is written at arrival + TTFT + k x token delay, on absolute deadlines so lateness
never accumulates; the last token's chunk has the finish reason, then a usage chunk, then [DONE].
It emits max_tokens tokens when the request sets ignore_eos, else min(max_tokens, --eos-after).
Faults on demand: --fail-every K answers HTTP 500 to every K-th request, --usage-extra D reports D
more completion tokens than it sent, --no-usage leaves usage out, --drop-reused closes a kept-alive
connection when a second request comes on it, unanswered (an idle-timeout race). --max-streams S streams at most S
answers at once, a server's batch limit: a request past it waits, first come first served, until one ends, then its
TTFT starts (its TTFT from arrival includes the wait, so latency grows with load in a way known by hand).
Load-dependent timing, known by hand, the gap fixed for a request's life: --token-ms-per-running B adds B ms to the
token gap for each answer streaming when it starts, itself included (a closed loop of U users: token_ms + B x U);
--token-ms-per-rate-step B adds B ms for each whole --rate-step S requests/s of the rate the server saw arrive:
the requests that arrived in the --recent-s W seconds up to this one, itself included, over W. That rate does not
depend on the server's own latency, so an arrival rate gives one gap: steady arrivals at R/s count ceil(R x W), and
the gap is token_ms + B x floor(ceil(R x W) / (W x S)).
--replies FILE (a JSON list of [needle, reply]) streams `reply` word by word to a prompt containing `needle`.
--tokens-per-chunk K merges tokens as a busy vLLM API server does: the first token alone, then K tokens a chunk, each
chunk written when its last token is due. --flavor says which server it answers as: plain (no more than the above),
vllm (GET /version, `owned_by: vllm`, `return_token_ids` names each chunk's tokens, `stream_options.
continuous_usage_stats` puts the running usage on every chunk, and GET /metrics has the
`vllm:num_requests_running` and `vllm:num_requests_waiting` gauges) or llamacpp (`owned_by: llamacpp`,
`timings_per_token` puts `timings.predicted_n` on every chunk). --keep-alive-s S closes a connection idle for S s
(uvicorn's, and so vLLM's, default is 5); --backlog N is the listen backlog (asyncio's default 100, uvicorn's 2048).
GET /stats: what the server actually did, timed on the same monotonic clock as its deadlines: median
TTFT (request read -> first token written), gap between tokens and time per output token, in ms; the connections it
accepted and closed for idleness. GET /timeline: [time, streaming, waiting] at every change (time.monotonic(), the
client's perf_counter clock; what a server's running and waiting gauges would read at each moment); GET /accepted:
when each connection was accepted, on that clock.
Timers fire up to ~1 ms late (epoll rounds its timeout up to whole ms) and later under load, so
these, not the flags, are the truth a client's measurement is compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path


class Server:
    """The OpenAI endpoints' answers, timed from the instant each request's last byte was read."""

    def __init__(self, args):
        self.args = args
        self.replies = json.loads(Path(args.replies).read_text()) if args.replies else []
        self.requests = 0
        self.dropped = 0
        self.in_flight = self.max_in_flight = 0
        self.pending: collections.deque = collections.deque()
        self.waiting: collections.deque = collections.deque()  # requests past --max-streams, in arrival order
        self.arrivals: collections.deque = collections.deque()  # when each load request arrived (the rate seen)
        self.ttft_ms: list[float] = []
        self.gaps_ms: list[float] = []
        self.tpot_ms: list[float] = []
        self.timeline: list[tuple[float, int, int]] = []  # (loop time, streaming, waiting) after every change
        self.connections = self.idle_closed = 0
        self.accepted: list[float] = []  # when each connection was accepted (time.monotonic())

    def later(self, work, *args) -> None:
        """Handle requests one per turn of the event loop: between two, the loop polls its sockets
        again, so a request that arrives while others are being handled is timed when it arrives."""
        self.pending.append((work, args))
        if len(self.pending) == 1:
            asyncio.get_running_loop().call_soon(self._next)

    def _next(self) -> None:
        work, args = self.pending.popleft()
        work(*args)
        if self.pending:
            asyncio.get_running_loop().call_soon(self._next)

    def handle(self, conn: HttpConnection, method: str, path: str, body: bytes, arrived: float) -> None:
        flavor = self.args.flavor
        if method == "GET" and path == "/v1/models":
            model = {"id": self.args.model, "object": "model"}
            if flavor != "plain":
                model["owned_by"] = flavor
            return conn.send_json(200, {"object": "list", "data": [model]})
        if method == "GET" and path == "/version" and flavor == "vllm":
            return conn.send_json(200, {"version": "0.26.0"})
        if method == "GET" and path == "/metrics" and flavor == "vllm":
            return conn.send_text(200, self.metrics())
        if method == "GET" and path == "/stats":
            return conn.send_json(200, self.stats())
        if method == "GET" and path == "/timeline":
            return conn.send_json(200, self.timeline)
        if method == "GET" and path == "/accepted":
            return conn.send_json(200, self.accepted)
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            return conn.send_json(404, {"error": {"message": f"no route {method} {path}"}})
        self.requests += 1
        self.arrivals.append(arrived)
        if self.args.fail_every and self.requests % self.args.fail_every == 0:
            return conn.send_json(500, {"error": {"message": "injected failure", "code": 500}})
        request = (conn, path.endswith("/chat/completions"), json.loads(body), arrived)
        if self.args.max_streams and self.in_flight >= self.args.max_streams:
            self.waiting.append(request)
            self.mark()
            return
        self.stream(*request)

    def mark(self) -> None:
        self.timeline.append((asyncio.get_running_loop().time(), self.in_flight, len(self.waiting)))

    def metrics(self) -> str:
        """The two gauges of vLLM's /metrics the load generator samples, in Prometheus' text format."""
        lines = []
        for name, value in (("num_requests_running", self.in_flight), ("num_requests_waiting", len(self.waiting))):
            lines += [f"# TYPE vllm:{name} gauge", f'vllm:{name}{{model_name="{self.args.model}"}} {float(value)}']
        return "\n".join(lines) + "\n"

    def ended(self) -> None:
        self.in_flight -= 1
        if self.waiting:
            self.stream(*self.waiting.popleft(), started=asyncio.get_running_loop().time())
        else:
            self.mark()

    def stream(self, conn: HttpConnection, chat: bool, body: dict, arrived: float,
               started: float | None = None) -> None:
        args, loop = self.args, asyncio.get_running_loop()
        if chat:
            prompt_text = " ".join(m.get("content") or "" for m in body.get("messages", []))
            prompt_tokens = len(prompt_text.split())
        else:
            prompt = body.get("prompt")
            prompt_text = prompt if isinstance(prompt, str) else ""
            prompt_tokens = len(prompt) if isinstance(prompt, list) else len(prompt_text.split())
        max_tokens = int(body.get("max_tokens") or 16)
        reply = next((r for needle, r in self.replies if needle in prompt_text), None)
        if reply is not None:
            pieces = re.findall(r"\S+\s*", reply)[:max_tokens]
        else:
            n = max_tokens if body.get("ignore_eos") else min(max_tokens, args.eos_after or max_tokens)
            pieces = [f"t{k} " for k in range(n)]
        base = {"id": "cmpl-test", "created": int(time.time()), "model": body.get("model", args.model),
                "object": "chat.completion.chunk" if chat else "text_completion"}
        options = body.get("stream_options") or {}
        vllm, llamacpp = args.flavor == "vllm", args.flavor == "llamacpp"
        ids = vllm and body.get("return_token_ids")
        running_usage = vllm and options.get("continuous_usage_stats")
        timings = llamacpp and body.get("timings_per_token")
        # chunk j carries tokens groups[j]: the first token alone, then --tokens-per-chunk at a time
        k = max(1, args.tokens_per_chunk)
        groups = [list(range(0, min(1, len(pieces))))] + [list(range(i, min(i + k, len(pieces))))
                                                         for i in range(1, len(pieces), k)]
        groups = [g for g in groups if g]

        def event(payload: dict) -> bytes:
            return b"data: " + json.dumps({**base, **payload}).encode() + b"\n\n"

        def usage(completion: int) -> dict:
            return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                    "total_tokens": prompt_tokens + completion}

        def chunk(j: int, group: list[int]) -> bytes:
            text = "".join(pieces[t] for t in group)
            finish = "length" if j == len(groups) - 1 else None
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            if ids:
                choice["token_ids"] = [1000 + t for t in group]
            payload = {"choices": [{**choice, "finish_reason": finish}]}
            if running_usage:
                payload["usage"] = usage(group[-1] + 1)
            if timings:
                payload["timings"] = {"predicted_n": group[-1] + 1}
            return event(payload)

        tail = b""
        if options.get("include_usage") and not args.no_usage:
            tail = event({"choices": [], "usage": usage(len(pieces) + args.usage_extra)})
        tail += b"data: [DONE]\n\n"
        conn.start_stream()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.mark()
        gap_ms = args.token_ms + args.token_ms_per_running * self.in_flight
        if args.token_ms_per_rate_step:
            steps = math.floor(self.recent(arrived) / (args.recent_s * args.rate_step) + 1e-9)
            gap_ms += args.token_ms_per_rate_step * steps
        if chat:  # the role-only opening chunk, at once: it is not a token
            conn.send_chunk(event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                "finish_reason": None}]}))
        first = (arrived if started is None else started) + args.ttft_ms / 1e3
        written: list[tuple[float, int]] = []  # (when, tokens) per chunk

        frames = [chunk(j, group) for j, group in enumerate(groups)]  # built now: a timer only writes

        def due(j: int) -> float:  # a chunk goes when its last token is due
            return first + groups[j][-1] * gap_ms / 1e3

        def write(j: int) -> None:
            written.append((loop.time(), len(groups[j])))
            conn.send_chunk(frames[j])
            if j < len(groups) - 1:  # one timer at a time: chunks due at the same instant stay in order
                loop.call_at(due(j + 1), write, j + 1)
                return
            conn.send_chunk(tail)
            conn.end_stream()
            self.record(arrived, written)
            self.ended()

        if groups:
            loop.call_at(due(0), write, 0)
        if not groups:
            conn.send_chunk(tail)
            conn.end_stream()
            self.ended()

    def recent(self, arrived: float) -> int:
        """Load requests that arrived in the --recent-s seconds up to `arrived`, that one included."""
        while self.arrivals and self.arrivals[0] < arrived - self.args.recent_s - 1.0:
            self.arrivals.popleft()
        return sum(arrived - self.args.recent_s < t <= arrived for t in self.arrivals)

    def record(self, arrived: float, written: list[tuple[float, int]]) -> None:
        """A finished stream's truth: TTFT, the gap before each token (a chunk of k tokens spreads the gap before
        it evenly over them, as the load generator's per-token ITL does) and TPOT."""
        self.ttft_ms.append((written[0][0] - arrived) * 1e3)
        self.gaps_ms += [0.0] * (written[0][1] - 1)
        for (a, _), (b, k) in zip(written, written[1:], strict=False):
            self.gaps_ms += [(b - a) * 1e3 / k] * k
        tokens = sum(k for _, k in written)
        if tokens > 1:
            self.tpot_ms.append((written[-1][0] - written[0][0]) * 1e3 / (tokens - 1))

    def stats(self) -> dict:
        def median(values):
            return statistics.median(values) if values else None

        return {"requests": self.requests, "dropped": self.dropped, "max_in_flight": self.max_in_flight,
                "connections": self.connections, "idle_closed": self.idle_closed,
                "ttft_ms_p50": median(self.ttft_ms), "itl_ms_p50": median(self.gaps_ms),
                "tpot_ms_p50": median(self.tpot_ms)}


class HttpConnection(asyncio.Protocol):
    """HTTP/1.1 on a raw protocol: a request's arrival is the loop time of the read that completed it,
    taken before any parsing (Server.later), so requests that arrive together are all timed before
    any of them is handled."""

    def __init__(self, server: Server):
        self.server = server
        self.served = 0
        self.buf = b""
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.server.connections += 1
        self.server.accepted.append(asyncio.get_running_loop().time())
        self.streaming = False
        self.idle_timer = None
        self.idle()

    def connection_lost(self, exc) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()

    def idle(self) -> None:
        """Between requests: closed after --keep-alive-s, as uvicorn closes a kept-alive connection."""
        if self.server.args.keep_alive_s:
            self.idle_timer = asyncio.get_running_loop().call_later(self.server.args.keep_alive_s, self.idle_close)

    def idle_close(self) -> None:
        if not self.streaming and not self.buf and not self.transport.is_closing():
            self.server.idle_closed += 1
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        arrived = asyncio.get_running_loop().time()
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        self.buf += data
        self.server.later(self.parse, arrived)

    def parse(self, arrived: float) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end].decode("latin-1").split("\r\n")
        method, path = head[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
        length = int(headers.get("content-length", 0))
        if len(self.buf) < end + 4 + length:
            return
        body, self.buf = self.buf[end + 4: end + 4 + length], self.buf[end + 4 + length:]
        self.served += 1
        if self.server.args.drop_reused and self.served > 1:
            self.server.dropped += 1
            self.transport.close()
            return
        self.server.handle(self, method, path, body, arrived)

    def send_json(self, status: int, payload: dict) -> None:
        self.send(status, json.dumps(payload).encode(), "application/json")

    def send_text(self, status: int, text: str) -> None:
        self.send(status, text.encode(), "text/plain; version=0.0.4")

    def send(self, status: int, data: bytes, content_type: str) -> None:
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
        self.transport.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        self.idle()

    def start_stream(self) -> None:
        self.streaming = True
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")

    def send_chunk(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self.streaming = False
        if not self.transport.is_closing():
            self.transport.write(b"0\r\n\r\n")
            self.idle()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="test-model")
    parser.add_argument("--ttft-ms", type=float, default=200.0)
    parser.add_argument("--token-ms", type=float, default=20.0)
    parser.add_argument("--eos-after", type=int, default=0, help="natural length without ignore_eos (0: max_tokens)")
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--usage-extra", type=int, default=0)
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--drop-reused", action="store_true")
    parser.add_argument("--replies", default=None)
    parser.add_argument("--max-streams", type=int, default=0, help="answers streamed at once (0: no limit)")
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--flavor", choices=("plain", "vllm", "llamacpp"), default="plain")
    parser.add_argument("--keep-alive-s", type=float, default=0, help="close connections idle this long (0: never)")
    parser.add_argument("--backlog", type=int, default=100)
    parser.add_argument("--token-ms-per-running", type=float, default=0.0,
                        help="ms added to the token gap per answer streaming when one starts, itself included")
    parser.add_argument("--token-ms-per-rate-step", type=float, default=0.0,
                        help="ms added to the token gap per whole --rate-step of the arrival rate seen")
    parser.add_argument("--rate-step", type=float, default=10.0, help="requests/s")
    parser.add_argument("--recent-s", type=float, default=2.0, help="the window the arrival rate is counted over")
    return parser.parse_args(argv)


async def serve(args) -> None:
    loop = asyncio.get_running_loop()
    server = Server(args)
    listener = await loop.create_server(lambda: HttpConnection(server), "127.0.0.1", args.port, backlog=args.backlog)
    host, port = listener.sockets[0].getsockname()[:2]
    print(f"http://{host}:{port}", flush=True)
    await asyncio.Event().wait()


@contextlib.contextmanager
def running(**options):
    """Start the server in its own process; yields its base URL. Options are the flags, e.g. ttft_ms=200."""
    argv = [sys.executable, __file__]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is not None and value is not False:
            argv += [flag, str(value)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"streaming server did not start (exit {proc.poll()})")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def stats(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/stats", timeout=10) as resp:
        return json.load(resp)


def accepted(url: str) -> list[float]:
    """When each connection was accepted (time.monotonic())."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/accepted", timeout=30) as resp:
        return json.load(resp)


def timeline(url: str) -> list[tuple[float, int, int]]:
    """(time.monotonic(), requests streaming, requests waiting) after every change."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/timeline", timeout=30) as resp:
        return [tuple(row) for row in json.load(resp)]


if __name__ == "__main__":
    asyncio.run(serve(parse_args()))
