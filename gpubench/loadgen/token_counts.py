"""How many tokens each streamed chunk carries: the way is asked of the server, once, before the load.

A server that falls behind its engine sends several tokens in one chunk (vLLM's API server merges the outputs of
several engine steps under load), so counting chunks undercounts the tokens that arrived, and the inter-token
latencies are then gaps between chunks. A server can say how many tokens a chunk carries when asked with a request
field (`WAYS`):
- token_ids: vLLM's `return_token_ids`: each choice names its tokens;
- usage: `stream_options.continuous_usage_stats` (vLLM, SGLang): the running usage on every chunk;
- timings: llama.cpp's `timings_per_token`: `timings.predicted_n`, the tokens generated so far, on every chunk
  (llama-server sends a chunk per token, but holds a token back while its bytes end mid-character, and sends no
  text chunk for an end-of-generation token or one completing a stop string: its closing usage chunk counts it).
`detect` takes who the server said it is (server_id.py), then sends one short streamed request with each field that
server may honour, in order, and keeps the first whose chunks all say their count. A server that says nothing of
itself is sent no field it may refuse: `chunks`, one token a chunk, which the result says once (LoadRun.info's
token_counting) instead of a usage mismatch on every request.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from gpubench.loadgen import client
from gpubench.loadgen.http_client import Pool, Target
from gpubench.loadgen.prompts import FIRST_RANDOM_ID, Prompt, sent_as
from gpubench.loadgen.server_id import ServerId
from gpubench.loadgen.spec import LoadSpec

WAYS: dict[str, dict] = {  # way -> the request fields that ask for it
    "token_ids": {"return_token_ids": True},
    "usage": {"stream_options": {"include_usage": True, "continuous_usage_stats": True}},
    "timings": {"timings_per_token": True},
    "chunks": {},
}
# who the server is (`owned_by`, or "vllm" when GET /version answers) -> the ways it may honour, cheapest first:
# a chunk's ids cost vLLM's API server less than a usage object on every chunk
SERVER_WAYS = {"vllm": ("token_ids", "usage"), "sglang": ("usage",), "llamacpp": ("timings",)}
PROBE_TOKENS = 8


@dataclass(frozen=True)
class TokenCounting:
    """How this load counts the tokens of a chunk, and how that was decided."""

    way: str  # a WAYS key
    server: str | None  # who the server said it is ("vllm 0.26.0", "llamacpp"), None when it did not say
    found: str  # how the way was chosen, in words

    @property
    def fields(self) -> dict:
        return WAYS[self.way]

    def info(self) -> dict:
        out = {"way": self.way, "server": self.server, "found": self.found}
        if self.way == "chunks":
            out["note"] = ("the server's chunks do not say how many tokens each carries: a chunk counts as one token,"
                           " the server's usage is the output count, and ITL is the gap between chunks; requests are"
                           " not checked against the server's count (no usage mismatch is counted)")
        return out


def given(way: str, server: ServerId | None = None) -> TokenCounting:
    return TokenCounting(way, server.said if server else None, "asked for (--count-tokens)")


def detect(spec: LoadSpec, server: ServerId) -> TokenCounting:
    """The way to count this server's tokens: who it says it is, then one short probe per way it may honour."""
    ways = SERVER_WAYS.get(server.kind or "", ())
    if not ways:
        said = f"the server says it is {server.said!r}" if server.said else \
            "the server did not say who it is (/version, owned_by)"
        return TokenCounting("chunks", server.said, f"{said}: no way to count a chunk's tokens is known for it")
    tried = []
    for way in ways:
        got = asyncio.run(_probe(spec, way))
        if got is None:
            return TokenCounting(way, server.said, f"{server.said}: a probe request's chunks each said their count")
        tried.append(f"{way}: {got}")
    return TokenCounting("chunks", server.said, f"{server.said}: no probe's chunks said their count"
                                                f" ({'; '.join(tried)})")


async def _probe(spec: LoadSpec, way: str) -> str | None:
    """None when one short streamed request asking `way` comes back with every token chunk saying its count; else
    what went wrong, in a few words."""
    prompt = Prompt([FIRST_RANDOM_ID] * 8, 8) if sent_as(spec) == "token ids" else Prompt("Say hello.", None)
    body = json.loads(client.payload(spec, prompt, WAYS[way]))
    body["max_tokens"] = min(spec.output_tokens, PROBE_TOKENS)
    target = Target.parse(spec.url)
    pool = Pool(target)
    try:
        raw = await client.send(pool, target.request("POST", json.dumps(body).encode(), client.headers()), 0, None,
                                min(spec.timeout_s, 60.0))
    finally:
        pool.close()
    record = client.parse(raw, way)
    if not record.ok:
        return f"{record.error_kind} {record.error or ''}".strip()[:120]
    return None if record.counted_by == way else f"chunks without their count ({record.counted_by or 'none'})"
