"""One user's decode speed on a GGUF: gpubench's load generator against llama.cpp's own llama-bench, back to back.

    .venv/bin/python benchmarks/llamacpp_peer.py --shape tiny                          # the CPU here (smoke GGUF)
    python3 benchmarks/llamacpp_peer.py --shape study --quant Q4_K_M --quant Q8_0 --out DIR    # the H200

For each GGUF (made as ollama-vs-vllm makes it: gpubench/servers/gguf.py, cached), rounds of two readings of the
same thing, one after the other on the same machine, and llama-bench once more at the end:
- llama-bench's token generation (`-p 0 -n N`: N tokens decoded one at a time from an empty context, R
  repetitions; its mean tokens/s), every layer on the GPU, flash attention as the server has it;
- llama-server, started once with the study's flags (LlamaCppFlags: 16 slots of 4096, batch 512), one user sending
  R chat requests of N tokens each (ignore_eos: exactly N) through `gpubench.loadgen`: decode tokens/s is
  1 / TPOT (its mean over the requests), and beside it the server's own rate over the same requests (/metrics:
  tokens_predicted over tokens_predicted_seconds).
The ratio of the medians, loadgen / llama-bench, is the check: what serving adds (HTTP, SSE, sampling over the
vocabulary, the chat template's few prompt tokens) on top of the engine's decode; the server's own rate says how
much of that is the client's. Prints a table; --out DIR also gets peer.json and the server logs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec
from gpubench.servers import gguf
from gpubench.servers.llamacpp import LlamaCppFlags, LlamaCppServer, find
from gpubench.servers.tiny_model import QWEN25_7B, TINY

MODEL = "Qwen/Qwen2.5-7B-Instruct"
PROMPT = "Explain database indexes to a new engineer who just joined the team."


def llama_bench(install, path: Path, tokens: int, reps: int, threads: int, flash_attn: str) -> dict:
    argv = [install.program("llama-bench"), "-m", str(path), "-p", "0", "-n", str(tokens), "-r", str(reps),
            "-ngl", "999", "-fa", {"auto": "auto", "on": "1", "off": "0"}[flash_attn], "-o", "json"]
    if threads:
        argv += ["-t", str(threads)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"llama-bench failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rows = json.loads(done.stdout)
    tg = next(r for r in rows if r.get("n_gen") == tokens and not r.get("n_prompt"))
    return {"tokens_per_s": tg["avg_ts"], "stddev": tg["stddev_ts"], "samples": tg.get("samples_ts"),
            "threads": tg.get("n_threads"), "gpu_layers": tg.get("n_gpu_layers"), "backend": tg.get("backends"),
            "flash_attn": tg.get("flash_attn"), "wall_s": round(time.perf_counter() - started, 1)}


class OneUser:
    """llama-server with the study's flags, and one user's decode speed measured through gpubench's load generator."""

    def __init__(self, install, path: Path, threads: int, flash_attn: str, log: Path):
        self.flags = LlamaCppFlags(model=str(path), alias=MODEL, threads=threads, flash_attn=flash_attn)
        self.server = LlamaCppServer(self.flags, log, install=install, echo=False)

    def measure(self, tokens: int, reps: int) -> dict:
        before = self.server.counters()
        spec = LoadSpec(base_url=self.server.base_url, model=MODEL, endpoint="chat", users=1, requests=reps,
                        warmup=2, prompts=(PROMPT,), output_tokens=tokens, ignore_eos=True, temperature=0.0)

        def timed() -> None:
            before.update(self.server.counters())

        run = run_load(spec, on_timed=timed)
        after = self.server.counters()
        seconds = after["generation_seconds"] - before["generation_seconds"]
        generated = after["generation_tokens"] - before["generation_tokens"]
        tpots = [r.tpot_s for r in run.records if r.ok and r.tpot_s]
        metrics = run.metrics()
        return {"tokens_per_s_mean_tpot": 1 / statistics.fmean(tpots), "tokens_per_s_median_tpot":
                1 / statistics.median(tpots), "server_tokens_per_s": generated / seconds if seconds else None,
                "requests": len(tpots), "completion_tokens_mean": metrics.get("completion_tokens_mean"),
                "usage_mismatches": metrics.get("usage_mismatches"), "ttft_ms_p50": metrics.get("ttft_ms_p50")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=("tiny", "study"), default="tiny")
    parser.add_argument("--quant", action="append", choices=tuple(gguf.QUANTS), help="repeatable; default Q4_K_M")
    parser.add_argument("--gguf", type=Path, help="a GGUF file instead of the random checkpoint's")
    parser.add_argument("--tokens", type=int, default=128, help="tokens generated per request / llama-bench -n")
    parser.add_argument("--reps", type=int, default=10, help="requests per round, and llama-bench repetitions")
    parser.add_argument("--rounds", type=int, default=3, help="llama-bench then loadgen, this many times")
    parser.add_argument("--threads", type=int, default=0, help="both programs' threads; 0: llama.cpp's default")
    parser.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--llamacpp-dir", default="")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    install = find(args.llamacpp_dir)
    shape = TINY if args.shape == "tiny" else QWEN25_7B
    targets = [(args.gguf.name, args.gguf)] if args.gguf else \
        [(quant, gguf.prepare(shape, quant, install).path) for quant in args.quant or ["Q4_K_M"]]
    out = args.out or Path(tempfile.mkdtemp(prefix="llamacpp-peer-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, path in targets:
        # rounds of llama-bench then loadgen, and llama-bench once more: each figure's spread and drift are seen
        bench_args = (install, path, args.tokens, args.reps, args.threads, args.flash_attn)
        served = OneUser(install, path, args.threads, args.flash_attn, out / f"llama-server-{name}.log")
        benches, loads = [], []
        served.server.start()
        try:
            for _ in range(args.rounds):
                benches.append(llama_bench(*bench_args))
                loads.append(served.measure(args.tokens, args.reps))
        finally:
            served.server.stop()
        benches.append(llama_bench(*bench_args))
        bench = statistics.median(b["tokens_per_s"] for b in benches)
        load = statistics.median(r["tokens_per_s_mean_tpot"] for r in loads)
        own = [r["server_tokens_per_s"] for r in loads if r["server_tokens_per_s"]]
        rows.append({"gguf": name, "file": str(path), "llama_bench": benches, "loadgen": loads,
                     "server_args": served.flags.args(), "llama_bench_median": bench, "loadgen_median": load,
                     "server_own_median": statistics.median(own) if own else None,
                     "ratio_loadgen_to_llama_bench": load / bench})
    about = {"llama.cpp": install.version(), "shape": args.shape, "tokens": args.tokens, "reps": args.reps,
             "rows": rows}
    (out / "peer.json").write_text(json.dumps(about, indent=2))
    print(f"llama.cpp {install.version()}, {args.shape} shape, {args.tokens} tokens x {args.reps}; {out}")
    print("| GGUF | llama-bench tg (median; each round) | loadgen 1 user, 1/TPOT mean (median; each round) | server's"
          " own | loadgen / llama-bench |")
    print("|---|---|---|---|---|")
    for row in rows:
        each_bench = ", ".join(f"{b['tokens_per_s']:.1f}" for b in row["llama_bench"])
        each_load = ", ".join(f"{r['tokens_per_s_mean_tpot']:.1f}" for r in row["loadgen"])
        own = f"{row['server_own_median']:.1f}" if row["server_own_median"] else "-"
        print(f"| {row['gguf']} | {row['llama_bench_median']:.1f} ({each_bench}) | {row['loadgen_median']:.1f}"
              f" ({each_load}) | {own} | {row['ratio_loadgen_to_llama_bench']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
