"""The tuned embedding pipeline: what the study advises for a host-bound encoder, measured end to end.

Plain encode() tokenizes a batch, runs it, copies the embeddings back, and only then tokenizes the
next batch, so the GPU waits on the CPU between batches. Here a pool of worker processes (one
single-threaded Rust tokenizer each, no GIL between them) tokenizes batches ahead; the main process
only moves ids to the GPU and launches the forward pass, and copies each pass's embeddings back once.
Texts in, normalised embeddings on the host out, as with encode(); tokenization is included.
The workers import only `tokenizers` and numpy: this module imports nothing heavy at module level.
"""

from __future__ import annotations

import itertools
import os
from collections import deque

from gpubench.measure import timing

_worker: dict = {}  # in each tokenizer process: its tokenizer and the passages


def _init_worker(tokenizer_json: str, texts: list[str], seq_len: int, lower: bool) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread per process: the pool is the parallelism
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json)
    tokenizer.enable_truncation(max_length=seq_len)  # counts [CLS] and [SEP], as transformers' truncation does
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)  # to the batch's longest, as encode()
    _worker.update(tokenizer=tokenizer, texts=texts, lower=lower)


def _tokenize(start: int, stop: int):
    """One batch, as sentence-transformers' Transformer.tokenize prepares it: stripped, lower-cased if the model is."""
    import numpy as np

    batch = [text.strip() for text in _worker["texts"][start:stop]]
    if _worker["lower"]:
        batch = [text.lower() for text in batch]
    encodings = _worker["tokenizer"].encode_batch(batch)
    ids = np.array([e.ids for e in encodings], dtype=np.int32)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int32)
    return start, ids, mask


class TokenizerPool:
    """Worker processes (spawned: the parent holds CUDA state) that each hold every passage once."""

    def __init__(self, model, texts: list[str], seq_len: int, workers: int):
        import multiprocessing

        tokenizer = model.tokenizer
        if not getattr(tokenizer, "is_fast", False):
            raise RuntimeError("the tuned pipeline needs a fast (Rust) tokenizer")
        lower = bool(getattr(model[0], "do_lower_case", False))
        self.texts, self.workers = texts, workers
        self.pool = multiprocessing.get_context("spawn").Pool(
            workers, initializer=_init_worker, initargs=(tokenizer.backend_tokenizer.to_str(), texts, seq_len, lower))

    def batches(self, batch: int):
        """(start, ids, mask) for consecutive batches, pass after pass, two per worker tokenized ahead."""
        n = len(self.texts)
        ranges = itertools.cycle([(s, min(s + batch, n)) for s in range(0, n, batch)])
        pending = deque(self.pool.apply_async(_tokenize, r) for r in itertools.islice(ranges, 2 * self.workers))
        try:
            while True:
                result = pending.popleft().get()
                pending.append(self.pool.apply_async(_tokenize, next(ranges)))
                yield result
        finally:  # let the batches tokenized ahead finish, so the next measurement starts with an idle pool
            for job in pending:
                job.wait()

    def close(self) -> None:
        self.pool.terminate()
        self.pool.join()


def encode(model, pool: TokenizerPool, template: dict, batch: int, seconds: float, whole_passes: bool,
           ctx=None, message: str | None = None):
    """Embed for at least `seconds`; returns (passages, elapsed s, the last whole pass's embeddings or None).

    whole_passes: stop only at the end of a pass over all passages, as the study's loop of encode() does.
    ctx: whose progress marks the timed phase (with `message`); None: the caller's phase goes on (the probes).
    """
    import torch

    device = next(model.parameters()).device
    on_cuda = device.type == "cuda"
    n = len(pool.texts)
    done, pass_outputs, last_pass = 0, [], None
    stream = pool.batches(batch)
    try:
        with timing.Timed(ctx, str(device), min_seconds=seconds, message=message) as timed, torch.inference_mode():
            for start, ids, mask in stream:
                features = dict(template)
                features["input_ids"] = _to_device(torch, ids, device, on_cuda)
                features["attention_mask"] = _to_device(torch, mask, device, on_cuda)
                if "token_type_ids" in template:
                    features["token_type_ids"] = torch.zeros_like(features["input_ids"])
                pass_outputs.append(model(features)["sentence_embedding"])
                done += len(ids)
                end_of_pass = start + len(ids) == n
                if end_of_pass:
                    last_pass = torch.cat(pass_outputs).cpu()  # embeddings on the host, as encode() returns them
                    pass_outputs = []
                if (end_of_pass or not whole_passes) and not timed.more(done):
                    break
    finally:  # after the clock: the batches tokenized ahead are not this measurement's
        stream.close()
    return done, timed.seconds, last_pass


def choose_batch(model, pool: TokenizerPool, template: dict, candidates: list[int], seconds: float, progress):
    """The batch size with the most passages/s over a short run each; {batch: rate or None if it ran out of memory}."""
    import torch

    rates: dict[int, float | None] = {}
    for i, batch in enumerate(candidates):
        progress("tuned_probe", done=i, total=len(candidates), message=f"batch {batch}")
        try:
            encode(model, pool, template, batch, seconds=0, whole_passes=False)  # first call at this shape
            done, elapsed, _ = encode(model, pool, template, batch, seconds=seconds, whole_passes=False)
            rates[batch] = done / elapsed
        except torch.cuda.OutOfMemoryError:
            rates[batch] = None
            torch.cuda.empty_cache()
    measured = {b: r for b, r in rates.items() if r is not None}
    if not measured:
        raise torch.cuda.OutOfMemoryError(f"the tuned pipeline ran out of memory at every batch size {candidates}")
    return max(measured, key=measured.get), rates


def _to_device(torch, array, device, on_cuda: bool):
    tensor = torch.from_numpy(array)
    if on_cuda:  # pinned, so the copy does not wait for the GPU to drain the work queued ahead of it
        return tensor.pin_memory().to(device, non_blocking=True).long()
    return tensor.long()
