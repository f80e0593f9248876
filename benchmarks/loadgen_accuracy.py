"""What the load generator's client costs and how close it measures: against tests/streaming_server.py.

For each number of users: the client's medians against what the server did (same monotonic clock),
in ms, and the client's CPU time per streamed token (its process, over the timed phase). The last
rows stream with no delay at all, so the client is the bottleneck: its top token rate on this machine.
Run from the repo root: python benchmarks/loadgen_accuracy.py [--ttft-ms 200 --token-ms 20 --tokens 32]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import streaming_server  # noqa: E402

from gpubench.loadgen.run import run_load  # noqa: E402
from gpubench.loadgen.spec import LoadSpec  # noqa: E402


def one(users: int, rounds: int, ttft_ms: float, token_ms: float, tokens: int) -> dict:
    with streaming_server.running(ttft_ms=ttft_ms, token_ms=token_ms) as url:
        spec = LoadSpec(base_url=url, model="m", users=users, requests=users * rounds, warmup=users, input_tokens=32,
                        output_tokens=tokens, ignore_eos=True)
        run = run_load(spec)
        truth = streaming_server.stats(url)
    m = run.metrics()
    return {
        "users": users, "token_ms": token_ms, "output_tokens_per_s": round(m["output_tokens_per_s"], 1),
        "client_cpu_us_per_token": round(m["client_cpu_us_per_token"], 1),
        "ttft_ms_client": round(m["ttft_ms_p50"], 3), "ttft_ms_server": round(truth["ttft_ms_p50"], 3),
        "ttft_error_ms": round(m["ttft_ms_p50"] - truth["ttft_ms_p50"], 3),
        "tpot_error_ms": round(m["tpot_ms_p50"] - truth["tpot_ms_p50"], 3),
        "itl_error_ms": round(m["itl_ms_p50"] - truth["itl_ms_p50"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-ms", type=float, default=200.0)
    parser.add_argument("--token-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--users", default="1,16,64,256")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    for users in (int(u) for u in args.users.split(",")):
        print(json.dumps(one(users, args.rounds, args.ttft_ms, args.token_ms, args.tokens)), flush=True)
    for users in (1, 64):  # no delay: the client is the bottleneck (its rate and cost; timing means nothing here)
        row = one(users, args.rounds, 0.0, 0.0, 256)
        print(json.dumps({k: row[k] for k in ("users", "token_ms", "output_tokens_per_s", "client_cpu_us_per_token")}),
              flush=True)


if __name__ == "__main__":
    main()
