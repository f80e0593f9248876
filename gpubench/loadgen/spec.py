"""What load to send: one dataclass, shared by the workloads, `gpubench loadgen` and the GSM8K check."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from gpubench.params import number_problem  # NaN passes every comparison; infinity is no rate or time

Endpoint = Literal["completions", "chat"]
ENDPOINT_PATHS = {"completions": "/completions", "chat": "/chat/completions"}
COUNT_TOKENS = ("auto", "token_ids", "usage", "timings", "chunks")  # token_counts.py; auto: asked of the server


# One client process streams this many users (or paces this many requests/s) with room to spare: at ~20 us of
# client CPU per streamed token and ~8 ms per token a user costs ~0.25% of a core, so the limit is read
# latency (every chunk waits for the chunks the loop handles before it), not throughput.
USERS_PER_PROCESS = 16
RATE_PER_PROCESS = 250.0
PROCESSES_VARIABLE = "GPUBENCH_CLIENT_PROCESSES"
# An open loop's arrivals span (requests - 1) / rate seconds. Bounded as --repeats is: a day is far past any study's
# load, and a slower schedule is a typo that would hold the server (and a rented GPU's bill) open for ever.
MAX_SCHEDULE_S = 24 * 3600  # sets the count where no spec field does (the serving studies)


class LoadSpecError(ValueError):
    """A spec that cannot run; str() is one line."""


@dataclass
class LoadSpec:
    """One load: who to call, how many users or what arrival rate, and what each request asks for.

    Prompts are `prompts` cycled when given, else random tokens: `prefix_tokens` shared by every
    request (the same ids each time) followed by `input_tokens` unique ones, so a prompt is
    prefix_tokens + input_tokens long. With `rate`, requests arrive on a schedule drawn before the load
    (gamma gaps of mean 1/rate: Poisson at burstiness 1, burstier below 1, steadier above, as vLLM's
    --burstiness; `users`, when set, caps how many are in flight, and a request waiting for a slot
    still counts its E2E from its scheduled time); without it, `users` users each send one request
    after another until `requests` are done. Warm-up requests (2 x the concurrency unless given) are
    sent first and not counted. The users (or the arrivals) are split over `processes` client
    processes, each its own event loop, when one core is not enough (None: chosen from the load and
    the cores, client_processes()).
    """

    base_url: str  # the OpenAI base URL, with or without the trailing /v1
    model: str
    endpoint: Endpoint = "completions"
    users: int | None = 1  # closed loop: concurrent users; with `rate`: the in-flight cap (None: none)
    requests: int = 16
    rate: float | None = None  # requests per second, open loop
    burstiness: float = 1.0  # the gamma shape of the gaps between arrivals: 1 is Poisson
    warmup: int | None = None  # None: 2 x the concurrency (users, or the rate's requests in flight)
    processes: int | None = None  # client processes; None: client_processes() chooses
    input_tokens: int = 512
    output_tokens: int = 256  # sent as max_tokens
    prefix_tokens: int = 0
    prompts: tuple[str, ...] = ()  # fixed prompts, cycled; empty: random-token prompts
    ignore_eos: bool = False  # vLLM's extension: generate exactly output_tokens
    # how a chunk's tokens are counted (token_counts.py): auto asks the server, once before the load, which way it
    # honours; token_ids is vLLM's return_token_ids, usage its continuous_usage_stats, timings llama.cpp's
    # timings_per_token; chunks counts a chunk as one token
    count_tokens: str = "auto"
    token_ids: bool = False  # count_tokens="token_ids", as the serving studies ask of their vLLM
    temperature: float = 0.0
    tokenizer: str | None = None  # a tokenizer folder: prompts as text of exact length, ids from its vocabulary
    # /v1/completions: send token-id lists, so the server skips tokenizing. Off, a prompt is text (as a real client's
    # and `vllm bench serve`'s are) whenever a tokenizer is given; without one, completions always get ids.
    prompt_ids: bool = False
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
        if self.rate is not None and (span := (self.requests - 1) / self.rate) > MAX_SCHEDULE_S:
            raise LoadSpecError(f"rate {self.rate:g} spreads {self.requests} requests over {span:.2g} s: at most"
                                f" {MAX_SCHEDULE_S:,} s (a day) of arrivals; raise the rate or send fewer requests")
        if problem := number_problem(self.burstiness, "a positive number", 0, min_open=True):
            raise LoadSpecError(f"burstiness {problem} (got {self.burstiness})")
        if self.count_tokens not in COUNT_TOKENS:
            raise LoadSpecError(f"count_tokens {self.count_tokens!r}: use one of {', '.join(COUNT_TOKENS)}")
        if self.token_ids:
            if self.count_tokens not in ("auto", "token_ids"):
                raise LoadSpecError(f"--token-ids and count_tokens {self.count_tokens} disagree: --token-ids is"
                                    " --count-tokens token-ids; give one")
            self.count_tokens = "token_ids"
        if self.processes is not None and self.processes < 1:
            raise LoadSpecError(f"processes must be at least 1 (got {self.processes})")
        if (env := os.environ.get(PROCESSES_VARIABLE)) and not (env.isdigit() and int(env) >= 1):
            raise LoadSpecError(f"{PROCESSES_VARIABLE}={env!r}: give a whole number of client processes, at least 1")
        if number_problem(self.temperature, "0 or more", 0):
            raise LoadSpecError(f"temperature must be a finite number, 0 or more (got {self.temperature})")
        for name in ("warmup", "input_tokens", "prefix_tokens"):
            if (getattr(self, name) or 0) < 0:
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
    def concurrency(self) -> int:
        """Requests in flight at most: the users, or for an uncapped rate about a second's arrivals."""
        if self.users is not None:
            return min(self.users, self.requests)
        return min(self.requests, max(1, math.ceil(self.rate)))

    @property
    def warmup_requests(self) -> int:
        return self.warmup if self.warmup is not None else 2 * self.concurrency

    def client_processes(self, cores: int | None = None) -> int:
        """The given count (the field, else $GPUBENCH_CLIENT_PROCESSES), else one per USERS_PER_PROCESS users
        (or RATE_PER_PROCESS requests/s), on at most a quarter of the cores (the rest are the server's), and never
        more processes than requests or users (each process has one user, or one in-flight slot, at least)."""
        most = min(self.requests, self.users or self.requests)
        given = self.processes or int(os.environ.get(PROCESSES_VARIABLE) or 0)
        if given:
            return min(given, most)
        cores = cores or len(os.sched_getaffinity(0))
        wanted = math.ceil(min(self.users, self.requests) / USERS_PER_PROCESS) if self.users else 1
        if self.rate is not None:
            wanted = max(wanted, math.ceil(self.rate / RATE_PER_PROCESS))
        return max(1, min(wanted, cores // 4, most))

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
        bursts = f"-b{self.burstiness:g}" if self.burstiness != 1 else ""
        return f"r{self.rate:g}{bursts}" + (f"-u{self.users}" if self.users else "")
