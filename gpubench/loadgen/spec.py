"""What load to send: one dataclass, shared by the workloads, `gpubench loadgen` and the GSM8K check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gpubench.params import number_problem  # NaN passes every comparison; infinity is no rate or time

Endpoint = Literal["completions", "chat"]
ENDPOINT_PATHS = {"completions": "/completions", "chat": "/chat/completions"}


class LoadSpecError(ValueError):
    """A spec that cannot run; str() is one line."""


@dataclass
class LoadSpec:
    """One load: who to call, how many users or what arrival rate, and what each request asks for.

    Prompts are `prompts` cycled when given, else random tokens: `prefix_tokens` shared by every
    request (the same ids each time) followed by `input_tokens` unique ones, so a prompt is
    prefix_tokens + input_tokens long. With `rate`, requests arrive as a Poisson process (`users`,
    when set, caps how many are in flight); without it, `users` users each send one request after
    another until `requests` are done. Warm-up requests are sent first and not counted.
    """

    base_url: str  # the OpenAI base URL, with or without the trailing /v1
    model: str
    endpoint: Endpoint = "completions"
    users: int | None = 1  # closed loop: concurrent users; with `rate`: the in-flight cap (None: none)
    requests: int = 16
    rate: float | None = None  # requests per second, Poisson arrivals
    warmup: int = 1
    input_tokens: int = 512
    output_tokens: int = 256  # sent as max_tokens
    prefix_tokens: int = 0
    prompts: tuple[str, ...] = ()  # fixed prompts, cycled; empty: random-token prompts
    ignore_eos: bool = False  # vLLM's extension: generate exactly output_tokens
    temperature: float = 0.0
    tokenizer: str | None = None  # a tokenizer folder: chat prompts of exact length, ids from its vocabulary
    vocab_size: int = 32000  # random ids are drawn below this when no tokenizer is given
    seed: int = 42
    max_error_rate: float = 0.01  # a run with a larger share of failed requests fails
    timeout_s: float = 600.0  # per request
    extra_body: dict[str, Any] = field(default_factory=dict)  # more request fields, e.g. {"seed": 0}

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise LoadSpecError(f"base URL {self.base_url!r}: use http://host:port[/v1]")
        if self.endpoint not in ENDPOINT_PATHS:
            raise LoadSpecError(f"endpoint {self.endpoint!r}: use one of {', '.join(ENDPOINT_PATHS)}")
        if self.users is not None and self.users < 1:
            raise LoadSpecError(f"users must be at least 1 (got {self.users})")
        if self.users is None and self.rate is None:
            raise LoadSpecError("give users, a rate, or both")
        if self.requests < 1:
            raise LoadSpecError(f"requests must be at least 1 (got {self.requests})")
        if self.rate is not None and number_problem(self.rate, "positive", 0, min_open=True):
            raise LoadSpecError(f"rate must be a positive number of requests per second (got {self.rate})")
        if number_problem(self.temperature, "0 or more", 0):
            raise LoadSpecError(f"temperature must be a finite number, 0 or more (got {self.temperature})")
        for name in ("warmup", "input_tokens", "prefix_tokens"):
            if getattr(self, name) < 0:
                raise LoadSpecError(f"{name} must not be negative (got {getattr(self, name)})")
        if self.output_tokens < 1:
            raise LoadSpecError(f"output_tokens must be at least 1 (got {self.output_tokens})")
        if not self.prompts and self.input_tokens + self.prefix_tokens < 1:
            raise LoadSpecError("a random prompt needs at least one token (input_tokens + prefix_tokens)")
        if self.vocab_size < 2:
            raise LoadSpecError(f"vocab_size must be at least 2 (got {self.vocab_size})")
        if number_problem(self.timeout_s, "positive", 0, min_open=True):
            raise LoadSpecError(f"timeout must be a positive number of seconds (got {self.timeout_s})")
        if number_problem(self.max_error_rate, "a fraction", 0, maximum=1):
            raise LoadSpecError(f"max_error_rate is a fraction between 0 and 1 (got {self.max_error_rate})")
        self.prompts = tuple(self.prompts)

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if not base.endswith("/v1"):
            base += "/v1"
        return base + ENDPOINT_PATHS[self.endpoint]

    @property
    def setup_name(self) -> str:
        """u64 (closed loop), r2.5 (Poisson) or r2.5-u64 (Poisson, at most 64 in flight)."""
        if self.rate is None:
            return f"u{self.users}"
        return f"r{self.rate:g}" + (f"-u{self.users}" if self.users else "")
