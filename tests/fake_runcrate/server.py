"""The HTTP side: a thread per connection (a held follow read must not block the rest),
every request recorded, auth checked, injected faults applied, then the route's handler."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from .faults import FaultPlan
from .routing import Request, Router
from .wire import ApiError, Response


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    """Without the query string, as sent (still percent-encoded)."""
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Names in lower case."""
    body: bytes


class _DropConnection(Exception):
    """Answer nothing: close the connection as a lost answer would."""


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, router: Router, faults: FaultPlan, api_key: str) -> None:
        self.router = router
        self.faults = faults
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._connection_threads: list[threading.Thread] = []
        self._track_lock = threading.Lock()
        self._serving: threading.Thread | None = None
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._serving = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                         name="fake-runcrate-http", daemon=True)
        self._serving.start()

    def stop_accepting(self) -> None:
        if self._serving is not None:
            self.shutdown()
            self._serving.join()
            self._serving = None

    def close_everything(self) -> None:
        """Closes the open connections (keep-alive ones included) and waits for their threads."""
        with self._track_lock:
            connections, threads = list(self._connections), list(self._connection_threads)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(timeout=5)
        self.server_close()

    def process_request(self, request, client_address) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name="fake-runcrate-conn", daemon=True)
        with self._track_lock:
            self._connections.add(request)
            self._connection_threads = [t for t in self._connection_threads if t.is_alive()]
            self._connection_threads.append(thread)
        thread.start()

    def shutdown_request(self, request) -> None:
        with self._track_lock:
            self._connections.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self) -> None:
        request = self._read_request()
        try:
            response = self._answer(request)
        except _DropConnection:
            self.close_connection = True
            return
        self._write(response)

    def _read_request(self) -> Request:
        raw_path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        parsed_query = parse_qs(query, keep_blank_values=True)
        self.server.requests.append(RecordedRequest(self.command, raw_path, parsed_query, headers, body))
        return Request(self.command, raw_path, parsed_query, headers, body)

    def _answer(self, request: Request) -> Response:
        server = self.server
        try:
            # Everything under /api/ needs the key; upload and signed download URLs do not.
            if request.path.startswith("/api/"):
                self._check_auth(request)
            route, params = server.router.find(request.method, request.path)
            fault = server.faults.take(request.method, request.path)
            if fault is not None and not fault.acts_first:
                time.sleep(fault.delay_s)
                if fault.drop:
                    raise _DropConnection
                return fault.error().response()
            if fault is not None:
                if route.sleeps_itself:
                    request.action_delay_s = fault.delay_s
                else:
                    time.sleep(fault.delay_s)
            try:
                response = route.handler(request, **params)
            except ApiError as error:
                response = error.response()
            if fault is not None:
                if fault.drop:
                    raise _DropConnection
                if fault.status is not None:
                    return fault.error().response()
            return response
        except ApiError as error:
            return error.response()

    def _check_auth(self, request: Request) -> None:
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.startswith("rc_live_") or key != self.server.api_key:
            raise ApiError(401, "unauthorized", "Invalid or missing API key")

    def _write(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if response.status != 204:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if response.status != 204 and response.body:
            self.wfile.write(response.body)
