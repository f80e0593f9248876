"""A GPU-backed OpenAI-compatible streaming server for trying the load generator on a real GPU.

A random-weight model of Qwen2.5-7B's shape (bf16, transformers, no hub), behind /v1/completions
(token-id or text prompts, streamed, `stream_options.include_usage`, `ignore_eos`). Batching is
static with a gather window: when the GPU is free, the waiting requests (up to --max-batch) are
left-padded, prefilled together and decoded together, one step for all of them, each request's
token streamed as soon as its step is done; requests that arrive meanwhile wait for the next batch.
Not a serving engine: it exists so that the load generator meets real GPU timing (prefill cost,
batched decode steps, lockstep streams), not a fake server's.

python benchmarks/gpu_loadgen.py --port 8000 [--tiny]   (--tiny: a small shape for a CPU check)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time

QWEN25_7B = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
             "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False}
TINY = {**QWEN25_7B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000}
EOS_ID = 151645  # <|im_end|>: never reached on purpose by random weights; ignore_eos makes sure


class Request:
    def __init__(self, prompt: list[int], max_tokens: int, ignore_eos: bool, loop, queue: asyncio.Queue):
        self.prompt, self.max_tokens, self.ignore_eos = prompt, max_tokens, ignore_eos
        self.loop, self.queue = loop, queue
        self.generated = 0

    def emit(self, token: int | None) -> None:
        """From the GPU thread: one token (None: finished) to the request's stream."""
        self.loop.call_soon_threadsafe(self.queue.put_nowait, token)


class Engine:
    """The GPU loop, in its own thread: gather waiting requests, prefill them together, decode together."""

    def __init__(self, shape: dict, device: str, max_batch: int, window_s: float):
        import torch
        from transformers import Qwen2Config, Qwen2ForCausalLM

        self.torch = torch
        self.device, self.max_batch, self.window_s = device, max_batch, window_s
        config = Qwen2Config(**shape)
        torch.manual_seed(0)
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        with torch.device(device):  # initialise on the GPU: 7.6B parameters on a CPU take minutes
            self.model = Qwen2ForCausalLM(config).eval()
        torch.set_default_dtype(previous)
        self.params_b = sum(p.numel() for p in self.model.parameters()) / 1e9
        self.waiting: list[Request] = []
        self.lock = threading.Condition()
        self.steps = 0
        threading.Thread(target=self._run, daemon=True).start()

    def submit(self, request: Request) -> None:
        with self.lock:
            self.waiting.append(request)
            self.lock.notify()

    def _gather(self) -> list[Request]:
        """Wait for work; then keep gathering while requests still arrive (quiet for window/4) or the window ends."""
        with self.lock:
            while not self.waiting:
                self.lock.wait()
            deadline = time.perf_counter() + self.window_s
            seen = len(self.waiting)
            while len(self.waiting) < self.max_batch and time.perf_counter() < deadline:
                self.lock.wait(timeout=self.window_s / 4)
                if len(self.waiting) == seen:
                    break
                seen = len(self.waiting)
            batch, self.waiting = self.waiting[: self.max_batch], self.waiting[self.max_batch:]
        return batch

    def _run(self) -> None:
        with self.torch.inference_mode():
            while True:
                batch = self._gather()
                try:
                    self._generate(batch)
                except Exception as exc:  # noqa: BLE001 - the server keeps serving; the requests end
                    print(f"engine: batch of {len(batch)} failed: {type(exc).__name__}: {exc}", flush=True)
                    for request in batch:
                        request.emit(None)

    def _generate(self, batch: list[Request]) -> None:
        torch = self.torch
        longest = max(len(r.prompt) for r in batch)
        ids = torch.tensor([[0] * (longest - len(r.prompt)) + r.prompt for r in batch], device=self.device)
        mask = torch.tensor([[0] * (longest - len(r.prompt)) + [1] * len(r.prompt) for r in batch], device=self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        past, active = out.past_key_values, list(range(len(batch)))
        token = out.logits[:, -1].argmax(-1)
        for _ in range(max(r.max_tokens for r in batch)):
            values = token.tolist()  # waits for the step: the tokens exist now
            for i in active:
                batch[i].generated += 1
                batch[i].emit(values[i])
            active = [i for i in active if batch[i].generated < batch[i].max_tokens
                      and (batch[i].ignore_eos or values[i] != EOS_ID)]
            for i in range(len(batch)):
                if i not in active and batch[i].generated and batch[i].queue is not None:
                    batch[i].emit(None)
                    batch[i].queue = None  # ended; later steps still compute its row (static batch)
            if not active:
                break
            mask = torch.cat([mask, mask.new_ones(len(batch), 1)], dim=-1)
            positions = positions[:, -1:] + 1
            out = self.model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                             past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1].argmax(-1)
            self.steps += 1


def build_app(engine: Engine, model_name: str):
    from aiohttp import web

    async def models(request):
        return web.json_response({"object": "list", "data": [{"id": model_name, "object": "model"}]})

    async def completions(request):
        body = await request.json()
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt = [100 + (ord(c) % 1000) for c in prompt]  # no tokenizer here: one token per character
        if not isinstance(prompt, list) or not prompt or not all(isinstance(t, int) for t in prompt):
            return web.json_response({"error": {"message": "prompt: a string or a list of token ids"}}, status=400)
        max_tokens = int(body.get("max_tokens") or 16)
        queue: asyncio.Queue = asyncio.Queue()
        req = Request(prompt, max_tokens, bool(body.get("ignore_eos")), asyncio.get_running_loop(), queue)
        engine.submit(req)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {"id": f"cmpl-{id(req)}", "object": "text_completion", "created": int(time.time()), "model": model_name}
        sent = 0
        while (token := await queue.get()) is not None:
            sent += 1
            finish = "length" if sent == max_tokens else ("stop" if token == EOS_ID and not req.ignore_eos else None)
            choice = {"index": 0, "text": f" {token}", "token_ids": [token], "finish_reason": finish}
            await resp.write(b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n")
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": len(prompt), "completion_tokens": sent, "total_tokens": len(prompt) + sent}
            await resp.write(b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model", default="qwen2.5-7b-random")
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--window-ms", type=float, default=20.0)
    parser.add_argument("--tiny", action="store_true", help="a small shape, for checking this script on a CPU")
    args = parser.parse_args()
    import torch
    from aiohttp import web

    # The GPU thread holds the GIL while it launches kernels; switch often so that streaming a token
    # (the event loop's thread) waits for it at most half a millisecond.
    sys.setswitchinterval(0.0005)
    started = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    engine = Engine(TINY if args.tiny else QWEN25_7B, device, args.max_batch, args.window_ms / 1e3)
    print(json.dumps({"model_params_b": round(engine.params_b, 3), "device": device,
                      "init_s": round(time.perf_counter() - started, 1)}), flush=True)
    web.run_app(build_app(engine, args.model), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
