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
GET /stats: what the server actually did, timed on the same monotonic clock as its deadlines: median
TTFT (request read -> first token written), gap between tokens and time per output token, in ms.
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
        if method == "GET" and path == "/v1/models":
            return conn.send_json(200, {"object": "list", "data": [{"id": self.args.model, "object": "model"}]})
        if method == "GET" and path == "/stats":
            return conn.send_json(200, self.stats())
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            return conn.send_json(404, {"error": {"message": f"no route {method} {path}"}})
        self.requests += 1
        self.arrivals.append(arrived)
        if self.args.fail_every and self.requests % self.args.fail_every == 0:
            return conn.send_json(500, {"error": {"message": "injected failure", "code": 500}})
        request = (conn, path.endswith("/chat/completions"), json.loads(body), arrived)
        if self.args.max_streams and self.in_flight >= self.args.max_streams:
            self.waiting.append(request)
            return
        self.stream(*request)

    def ended(self) -> None:
        self.in_flight -= 1
        if self.waiting:
            self.stream(*self.waiting.popleft(), started=asyncio.get_running_loop().time())

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

        def event(payload: dict) -> bytes:
            return b"data: " + json.dumps({**base, **payload}).encode() + b"\n\n"

        def token(k: int, piece: str) -> bytes:
            finish = "length" if k == len(pieces) - 1 else None
            choice = {"index": 0, "delta": {"content": piece}} if chat else {"index": 0, "text": piece}
            return event({"choices": [{**choice, "finish_reason": finish}]})

        tail = b""
        if body.get("stream_options", {}).get("include_usage") and not args.no_usage:
            completion = len(pieces) + args.usage_extra
            tail = event({"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                                                   "total_tokens": prompt_tokens + completion}})
        tail += b"data: [DONE]\n\n"
        conn.start_stream()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        gap_ms = args.token_ms + args.token_ms_per_running * self.in_flight
        if args.token_ms_per_rate_step:
            steps = math.floor(self.recent(arrived) / (args.recent_s * args.rate_step) + 1e-9)
            gap_ms += args.token_ms_per_rate_step * steps
        if chat:  # the role-only opening chunk, at once: it is not a token
            conn.send_chunk(event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                "finish_reason": None}]}))
        first = (arrived if started is None else started) + args.ttft_ms / 1e3
        written: list[float] = []

        frames = [token(k, piece) for k, piece in enumerate(pieces)]  # built now: a timer only writes

        def write(k: int) -> None:
            written.append(loop.time())
            conn.send_chunk(frames[k])
            if k < len(pieces) - 1:  # one timer at a time: tokens due at the same instant stay in order
                loop.call_at(first + (k + 1) * gap_ms / 1e3, write, k + 1)
                return
            conn.send_chunk(tail)
            conn.end_stream()
            self.record(arrived, written)
            self.ended()

        if pieces:
            loop.call_at(first, write, 0)
        if not pieces:
            conn.send_chunk(tail)
            conn.end_stream()
            self.ended()

    def recent(self, arrived: float) -> int:
        """Load requests that arrived in the --recent-s seconds up to `arrived`, that one included."""
        while self.arrivals and self.arrivals[0] < arrived - self.args.recent_s - 1.0:
            self.arrivals.popleft()
        return sum(arrived - self.args.recent_s < t <= arrived for t in self.arrivals)

    def record(self, arrived: float, written: list[float]) -> None:
        self.ttft_ms.append((written[0] - arrived) * 1e3)
        self.gaps_ms += [(b - a) * 1e3 for a, b in zip(written, written[1:], strict=False)]
        if len(written) > 1:
            self.tpot_ms.append((written[-1] - written[0]) * 1e3 / (len(written) - 1))

    def stats(self) -> dict:
        def median(values):
            return statistics.median(values) if values else None

        return {"requests": self.requests, "dropped": self.dropped, "max_in_flight": self.max_in_flight,
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

    def data_received(self, data: bytes) -> None:
        arrived = asyncio.get_running_loop().time()
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
        data = json.dumps(payload).encode()
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
        self.transport.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    def start_stream(self) -> None:
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")

    def send_chunk(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        if not self.transport.is_closing():
            self.transport.write(b"0\r\n\r\n")


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
    listener = await loop.create_server(lambda: HttpConnection(server), "127.0.0.1", args.port)
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


if __name__ == "__main__":
    asyncio.run(serve(parse_args()))
