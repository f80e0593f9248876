"""A minimal HTTP/1.1 client on asyncio's Protocol: keep-alive connections, one streamed POST at a time.

Why not a general client: the load generator has to time every read of up to hundreds of streams
that the server feeds in the same instant. Here a read is timed in `data_received`, the first
Python code that sees it, before any coroutine wakes up, and the only work done there is the
transfer framing (chunked or Content-Length). A request's clock starts when its prepared bytes are
handed to the socket, so building requests and opening connections are not in anyone's latency.
Supports http and https, Content-Length and chunked bodies, `Connection: close`; no proxies, no
compression (it asks for identity), no HTTP/2.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class HttpError(Exception):
    """The connection or the framing failed; `kind` names how (connection, broken_stream, timeout)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.reused = False  # the connection had served a request before (a stale keep-alive, maybe)


@dataclass
class Response:
    status: int
    pieces: list[bytes] = field(default_factory=list)  # the body as it arrived, framing removed
    times: list[float] = field(default_factory=list)  # perf_counter of the read that completed each piece
    sent: float = 0.0  # perf_counter just before the request was written

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: bool
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return cls(parts.hostname or "localhost", parts.port or (443 if tls else 80), tls, path or "/")

    def request(self, method: str, body: bytes, headers: dict[str, str]) -> bytes:
        host = self.host if self.port in (80, 443) else f"{self.host}:{self.port}"
        lines = [f"{method} {self.path} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity",
                 f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connection(asyncio.Protocol):
    """One keep-alive connection; `exchange` sends a request and waits for the whole response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False  # it served a request before this one
        self.idle_since = time.perf_counter()
        self._reset(None)

    def _reset(self, waiter: asyncio.Future | None) -> None:
        self._waiter = waiter
        self._buf = bytearray()
        self._response: Response | None = None
        self._state = "head"
        self._remaining = 0  # Content-Length bytes still to come, or the current chunk's size
        self._keep_alive = True

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            if self._state == "until_close" and self._response is not None:
                self._waiter.set_result(self._response)
            else:
                self._waiter.set_exception(HttpError(
                    "connection" if self._state == "head" else "broken_stream",
                    f"connection closed {'before the response' if self._state == 'head' else 'mid-response'}"
                    + (f": {exc}" if exc else "")))

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self._waiter is None or self._waiter.done():
            return  # bytes nobody asked for (or after a timeout): the connection is not reused
        try:
            self._buf += data
            if self._frame(now):
                self._waiter.set_result(self._response)
        except (ValueError, IndexError) as exc:
            self._keep_alive = False
            self._waiter.set_exception(HttpError("broken_stream", f"bad HTTP framing: {exc}"))

    def _frame(self, now: float) -> bool:
        """Move complete pieces of body from the buffer into the response; True once it is complete."""
        buf, resp = self._buf, self._response
        if self._state == "head":
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return False
            resp = self._response = self._head(bytes(buf[:end]).decode("latin-1"))
            del buf[: end + 4]
        pos = 0
        while True:
            if self._state == "length":
                take = min(self._remaining, len(buf) - pos)
                if take:
                    resp.pieces.append(bytes(buf[pos: pos + take]))
                    resp.times.append(now)
                    pos += take
                    self._remaining -= take
                done = self._remaining == 0
                break
            if self._state == "until_close":
                if len(buf) > pos:
                    resp.pieces.append(bytes(buf[pos:]))
                    resp.times.append(now)
                    pos = len(buf)
                done = False
                break
            if self._state == "chunk_size":
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    done = False
                    break
                self._remaining = int(bytes(buf[pos:eol]).split(b";")[0], 16)
                pos = eol + 2
                self._state = "chunk_data" if self._remaining else "trailer"
            if self._state == "chunk_data":
                if len(buf) - pos < self._remaining + 2:
                    done = False
                    break
                resp.pieces.append(bytes(buf[pos: pos + self._remaining]))
                resp.times.append(now)
                pos += self._remaining + 2
                self._state = "chunk_size"
            if self._state == "trailer":
                if buf[pos: pos + 2] == b"\r\n":
                    pos += 2
                    done = True
                    break
                end = buf.find(b"\r\n\r\n", pos)
                if end < 0:
                    done = False
                    break
                pos = end + 4
                done = True
                break
        del buf[:pos]
        return done

    def _head(self, head: str) -> Response:
        status_line, *header_lines = head.split("\r\n")
        version, status = status_line.split(" ", 2)[:2]
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self._keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = "chunk_size"
        elif "content-length" in headers:
            self._state, self._remaining = "length", int(headers["content-length"])
        else:
            self._state, self._keep_alive = "until_close", False
        return Response(status=int(status))

    async def exchange(self, request: bytes, timeout: float) -> Response:
        waiter = asyncio.get_running_loop().create_future()
        self._reset(waiter)
        sent = time.perf_counter()
        self.transport.write(request)
        try:
            response = await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            self.close()
            raise HttpError("timeout", f"no complete response within {timeout:g} s") from None
        except HttpError:
            self.close()
            raise
        response.sent = sent
        self._waiter = None
        self.idle_since = time.perf_counter()
        if not self._keep_alive:
            self.close()
        return response

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


# A connection idle this long is opened again before a timed phase: uvicorn (vLLM's server) closes one idle for 5 s,
# so one idle for 1 s still has 4 s, far more than the wait for the start (share.START_LEAD_S).
MAX_IDLE_S = 1.0


class Pool:
    """Idle keep-alive connections to one host; a new one is opened when none is idle (`opened` counts them)."""

    def __init__(self, target: Target):
        self.target = target
        self._idle: list[Connection] = []
        self._all: list[Connection] = []
        self._ssl = ssl.create_default_context() if target.tls else None
        self.opened = 0

    async def fill(self, count: int, timeout: float, max_idle_s: float = MAX_IDLE_S) -> None:
        """`count` idle connections open: those the server closed meanwhile (uvicorn closes one idle for 5 s), or
        that have been idle for max_idle_s and may be closed any moment, are dropped and new ones opened, together,
        so no request of a timed phase waits for a connection. One that cannot be opened is left to the request that
        needs it (which records the error)."""
        now = time.perf_counter()
        for conn in self._idle:
            if now - conn.idle_since > max_idle_s:
                conn.close()
        self._idle = [conn for conn in self._idle if not conn.closed]
        missing = count - len(self._idle)
        if missing > 0:
            opened = await asyncio.gather(*(self.acquire(timeout, fresh=True) for _ in range(missing)),
                                          return_exceptions=True)
            self._idle.extend(conn for conn in opened if isinstance(conn, Connection))

    async def acquire(self, timeout: float, fresh: bool = False) -> Connection:
        """An idle connection (unless `fresh`), else a new one."""
        while self._idle and not fresh:
            conn = self._idle.pop()
            if not conn.closed:
                conn.reused = True
                return conn
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(loop.create_connection(
                Connection, self.target.host, self.target.port, ssl=self._ssl,
                server_hostname=self.target.host if self._ssl else None), timeout)
        except TimeoutError:
            raise HttpError("timeout", f"could not connect to {self.target.host}:{self.target.port}"
                                       f" within {timeout:g} s") from None
        except OSError as exc:
            raise HttpError("connection", f"cannot connect to {self.target.host}:{self.target.port}:"
                                          f" {exc.strerror or exc}") from None
        self._all.append(conn)
        self.opened += 1
        return conn

    def release(self, conn: Connection) -> None:
        if not conn.closed:
            self._idle.append(conn)

    def close(self) -> None:
        for conn in self._all:
            conn.close()

