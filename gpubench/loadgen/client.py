"""One streamed request to an OpenAI-compatible server -> one RequestRecord.

While a stream is open the client does as little as it can: it takes the time of every read and
keeps its bytes (http_client.py), nothing else. Parsing the server-sent events happens after the load is
over (`parse`), so the client's JSON work never lands between two tokens of another stream, nor in
anyone's time to first token. An event's time is the time of the read that brought its last byte.
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass, field
from typing import Any

from gpubench.loadgen.http_client import HttpError, Pool
from gpubench.loadgen.prompts import Prompt
from gpubench.loadgen.spec import LoadSpec


@dataclass
class RequestRecord:
    """What one request did. Times are seconds from sending it; token counts are the server's."""

    index: int
    ok: bool
    sent: float | None = None  # perf_counter when the request was written (None: it never was)
    schedule_delay_s: float = 0.0  # open loop: sent - when it was due (the pacer's lateness and any wait for a slot)
    error_kind: str | None = None  # http_500, timeout, connection, stream_error, no_tokens, incomplete...
    error: str | None = None
    ttft_s: float | None = None  # to the first chunk carrying a token
    last_token_s: float | None = None
    e2e_s: float | None = None  # to the end of the stream
    itl_s: list[float] = field(default_factory=list)  # every gap between token chunks
    prompt_tokens_sent: int | None = None  # when the prompt's length is known exactly
    prompt_tokens: int | None = None  # usage, as the server reports it
    completion_tokens: int | None = None  # usage, as the server reports it
    tokens_received: int = 0  # tokens that arrived: the ids chunks name, else one per chunk that carried a token
    chunks: int = 0  # chunks that carried a token (inter-token gaps are between these)
    usage_mismatch: str | None = None  # why the server's count and what arrived disagree
    text: str = ""

    @property
    def output_tokens(self) -> int:
        return self.completion_tokens if self.completion_tokens is not None else self.tokens_received

    @property
    def e2e_from_schedule_s(self) -> float | None:
        """E2E from when the request was due: what a user arriving then waits, the client's queueing included."""
        return None if self.e2e_s is None else self.e2e_s + self.schedule_delay_s

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first, as vLLM's benchmark defines it."""
        if self.ttft_s is None or self.last_token_s is None or self.output_tokens < 2:
            return None
        return (self.last_token_s - self.ttft_s) / (self.output_tokens - 1)


@dataclass
class RawResponse:
    """A response as it arrived: its body in pieces, each with the perf_counter time of the read that
    completed it; or why it failed."""

    index: int
    start: float
    prompt_tokens_sent: int | None
    due: float | None = None  # open loop: the perf_counter time it was scheduled for
    reads: list[bytes] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    error_kind: str | None = None
    error: str | None = None


def payload(spec: LoadSpec, prompt: Prompt) -> bytes:
    body: dict[str, Any] = {
        "model": spec.model, "max_tokens": spec.output_tokens, "temperature": spec.temperature,
        "stream": True, "stream_options": {"include_usage": True},
    }
    if spec.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt.as_text()}]
    else:
        body["prompt"] = prompt.body
    if spec.ignore_eos:
        body["ignore_eos"] = True
    if spec.token_ids:
        body["return_token_ids"] = True
    body.update(spec.extra_body)
    return json.dumps(body).encode()


def headers() -> dict[str, str]:
    """JSON, and a bearer token when OPENAI_API_KEY is set (it is sent, never recorded)."""
    out = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if os.environ.get("OPENAI_API_KEY"):
        out["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    return out


async def send(pool: Pool, request: bytes, index: int, prompt_tokens: int | None, timeout: float,
               due: float | None = None) -> RawResponse:
    """Send one prepared request on a pooled connection and keep its response as it arrived."""
    raw = RawResponse(index=index, start=0.0, prompt_tokens_sent=prompt_tokens, due=due)
    try:
        try:
            response = await _exchange(pool, request, timeout, fresh=False)
        except HttpError as exc:
            # A server may close an idle keep-alive connection just as a request goes out on it
            # (uvicorn after 5 s): that request never reached it, so it is sent again on a new one.
            if not exc.reused or exc.kind != "connection":
                raise
            response = await _exchange(pool, request, timeout, fresh=True)
    except HttpError as exc:
        raw.error_kind, raw.error = exc.kind, _short(str(exc))
        return raw
    raw.start = response.sent
    if response.status != 200:
        raw.error_kind, raw.error = f"http_{response.status}", _short(response.body.decode(errors="replace"))
        return raw
    raw.reads, raw.times = response.pieces, response.times
    return raw


async def _exchange(pool: Pool, request: bytes, timeout: float, fresh: bool):
    conn = await pool.acquire(timeout, fresh=fresh)
    try:
        return await conn.exchange(request, timeout)
    except HttpError as exc:
        exc.reused = conn.reused
        raise
    finally:
        pool.release(conn)


def parse(raw: RawResponse) -> RequestRecord:
    """The record of a finished response: its events timed by the read that completed them."""
    record = RequestRecord(index=raw.index, ok=False, sent=raw.start or None, error_kind=raw.error_kind,
                           error=raw.error, prompt_tokens_sent=raw.prompt_tokens_sent)
    if raw.due is not None and raw.start:
        record.schedule_delay_s = max(0.0, raw.start - raw.due)
    if raw.error_kind:
        return record
    buffer = b"".join(raw.reads)
    ends = []
    total = 0
    for data in raw.reads:
        total += len(data)
        ends.append(total)
    token_times: list[float] = []
    received = 0
    text: list[str] = []
    done = finished = False
    usage = None
    position = 0
    for line in buffer.split(b"\n"):
        line_end = position + len(line)  # the index of this line's newline
        position = line_end + 1
        line = line.strip()
        if not line.startswith(b"data:"):
            continue  # blank separators, SSE comments and fields other than data
        data = line[5:].strip()
        if data == b"[DONE]":
            done = True
            continue
        at = raw.times[min(bisect.bisect_right(ends, line_end), len(ends) - 1)] - raw.start
        try:
            event = json.loads(data)
        except ValueError:
            return _failed(record, "bad_json", data.decode(errors="replace"))
        if not isinstance(event, dict):
            return _failed(record, "bad_json", data.decode(errors="replace"))
        if "error" in event or event.get("object") == "error":
            return _failed(record, "stream_error", json.dumps(event.get("error", event)))
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices") or []:
            piece, is_token = _token(choice)
            finished = finished or bool(choice.get("finish_reason"))
            if is_token:
                token_times.append(at)
                text.append(piece)
                ids = choice.get("token_ids")
                received += len(ids) if isinstance(ids, list) and ids else 1
    record.e2e_s = raw.times[-1] - raw.start if raw.times else None
    record.text = "".join(text)
    record.tokens_received, record.chunks = received, len(token_times)
    if usage:
        record.prompt_tokens = usage.get("prompt_tokens")
        record.completion_tokens = usage.get("completion_tokens")
    if not token_times:
        return _failed(record, "no_tokens", "the stream ended without a token")
    if not (done or finished):
        return _failed(record, "incomplete", "the stream ended without a finish reason or [DONE]")
    record.ttft_s, record.last_token_s = token_times[0], token_times[-1]
    record.itl_s = [b - a for a, b in zip(token_times, token_times[1:], strict=False)]
    if record.completion_tokens is None:
        record.usage_mismatch = "no usage in the stream"
    elif record.completion_tokens != record.tokens_received:
        record.usage_mismatch = (f"server counted {record.completion_tokens} completion tokens,"
                                 f" {record.tokens_received} arrived")
    record.ok = True
    return record


def _token(choice: dict) -> tuple[str, bool]:
    """The text a choice carries and whether it is a token: the role-only opening chunk of a chat
    stream and an empty closing chunk (finish reason only) are not; an empty piece between them is
    (a token whose bytes end mid-character decodes to nothing yet)."""
    if "delta" in choice:
        delta = choice["delta"] or {}
        piece = delta.get("content") or ""
        if piece or delta.get("reasoning_content") or delta.get("reasoning"):
            return piece, True
        return piece, "content" in delta and "role" not in delta and not choice.get("finish_reason")
    piece = choice.get("text")
    if piece is None:
        return "", False
    return piece, bool(piece) or not choice.get("finish_reason")


def _failed(record: RequestRecord, kind: str, message: str) -> RequestRecord:
    record.ok, record.error_kind, record.error = False, kind, _short(message)
    return record


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text[:300]


