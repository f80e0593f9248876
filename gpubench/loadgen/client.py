"""One streamed request to an OpenAI-compatible server -> one RequestRecord.

While a stream is open the client does as little as it can: it takes the time of every read and
keeps its bytes (http_client.py), nothing else. Parsing the server-sent events happens after the load is
over (`parse`), so the client's JSON work never lands between two tokens of another stream, nor in
anyone's time to first token. An event's time is the time of the read that brought its last byte.

A chunk may carry several tokens (a server behind its engine merges them); it counts as as many as it says it
carries (token_counts.py: the ids it names, or the growth of a running count it carries), else as one. Inter-token
latency is per token: the gap before a chunk of k tokens is spread evenly over them (k gaps of gap/k), and the tokens
that come with the first beyond it have 0 ms, so a request's ITLs add up to its last token minus its first over
its tokens after the first, the span TPOT divides. vLLM's benchmark keeps one ITL per chunk, whatever it carries
(vllm/benchmarks/lib/endpoint_request_func.py, `output.itl.append(timestamp - most_recent_timestamp)` per chunk) while
its TPOT divides by every output token (vllm/benchmarks/serve.py, calculate_metrics: `latency_minus_ttft /
(output_len - 1)`); that per-chunk figure is kept as the chunk gap. Splitting a chunk's gap over its tokens is what
vLLM's open fixes of its ITL propose (vllm-project/vllm#46652, from issue #27485) and what SGLang's bench_serving does
with --accept-length (a chunk's gap / its tokens, once per token).
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
    itl_s: list[float] = field(default_factory=list)  # per token after the first (a chunk's gap spread over its k)
    chunk_gaps_s: list[float] = field(default_factory=list)  # between token chunks (vLLM's benchmark's ITL)
    prompt_tokens_sent: int | None = None  # when the prompt's length is known exactly
    prompt_tokens: int | None = None  # usage, as the server reports it
    completion_tokens: int | None = None  # usage, as the server reports it
    tokens_received: int = 0  # tokens that arrived, as the chunks said (one a chunk where a chunk did not say)
    chunks: int = 0  # chunks that carried a token
    counted_by: str | None = None  # how every token chunk said its count (token_counts.WAYS), None if one did not
    usage_mismatch: str | None = None  # the server's count and the tokens its chunks said they carried disagree
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


def payload(spec: LoadSpec, prompt: Prompt, counting: dict[str, Any] | None = None) -> bytes:
    """The request body; `counting`: the fields that ask the server to say each chunk's token count."""
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
    for name, value in (counting or {}).items():
        body[name] = {**body[name], **value} if isinstance(value, dict) and isinstance(body.get(name), dict) else value
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


def parse(raw: RawResponse, way: str = "chunks") -> RequestRecord:
    """The record of a finished response: its events timed by the read that completed them. `way`: how the request
    asked the server to say each chunk's token count (token_counts.WAYS); the ids a chunk names count whatever was
    asked, a usage on a chunk is a running count only when it was asked for (else it is the closing total)."""
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
    chunk_times: list[float] = []
    chunk_tokens: list[int] = []
    ways: set[str | None] = set()  # how each token chunk said its count (None: it did not)
    running = 0  # the running count a chunk carries (continuous usage, llama.cpp's timings), last seen
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
        so_far, so_far_way = _running_count(event, way)
        grown = max(0, so_far - running) if so_far is not None else None
        if so_far is not None:
            running = so_far
        if not event.get("choices") and grown:
            # a closing chunk whose running count grew: tokens the server generated and sent no text for (llama.cpp
            # counts the end-of-generation token, or one completing a stop string, and names it only in the closing
            # usage chunk's timings)
            chunk_times.append(at)
            chunk_tokens.append(grown)
            ways.add(so_far_way)
        for choice in event.get("choices") or []:
            piece, is_token = _token(choice)
            finished = finished or bool(choice.get("finish_reason"))
            ids = choice.get("token_ids")
            if isinstance(ids, list) and ids:
                count, way = len(ids), "token_ids"
            elif grown is not None and len(event["choices"]) == 1:
                count, way = grown, so_far_way
            else:
                count, way = (1, None) if is_token else (0, None)
            if is_token or count > 0:  # a chunk the server says carried a token is one, whatever its text
                chunk_times.append(at)
                chunk_tokens.append(max(count, 1) if way is None else count)
                ways.add(way)
                text.append(piece)
    record.e2e_s = raw.times[-1] - raw.start if raw.times else None
    record.text = "".join(text)
    record.tokens_received, record.chunks = sum(chunk_tokens), len(chunk_times)
    if usage:
        record.prompt_tokens = usage.get("prompt_tokens")
        record.completion_tokens = usage.get("completion_tokens")
    if not chunk_times:
        return _failed(record, "no_tokens", "the stream ended without a token")
    if not (done or finished):
        return _failed(record, "incomplete", "the stream ended without a finish reason or [DONE]")
    first = next(i for i, k in enumerate(chunk_tokens) if k > 0) if any(chunk_tokens) else 0
    record.ttft_s, record.last_token_s = chunk_times[first], chunk_times[-1]
    record.itl_s = [0.0] * max(0, chunk_tokens[first] - 1)
    record.chunk_gaps_s = []
    for before, at, k in zip(chunk_times[first:], chunk_times[first + 1:], chunk_tokens[first + 1:], strict=False):
        record.chunk_gaps_s.append(at - before)
        record.itl_s += [(at - before) / k] * k if k else []
    record.counted_by = None if None in ways else "+".join(sorted(ways))
    if record.counted_by and record.completion_tokens is not None and \
            record.completion_tokens != record.tokens_received:
        record.usage_mismatch = (f"server counted {record.completion_tokens} completion tokens, its chunks said"
                                 f" {record.tokens_received}")
    record.ok = True
    return record


def _running_count(event: dict, way: str) -> tuple[int | None, str | None]:
    """The tokens generated so far as a chunk says it (llama.cpp's timings; the usage, when continuous usage was
    asked for), and which."""
    usage, timings = event.get("usage"), event.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
        return timings["predicted_n"], "timings"
    if way == "usage" and event.get("choices") and isinstance(usage, dict) and \
            isinstance(usage.get("completion_tokens"), int):
        return usage["completion_tokens"], "usage"
    return None, None


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


