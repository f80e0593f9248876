"""A random checkpoint shaped like Qwen2.5-7B-Instruct, written to local disk in the Hugging Face cache layout.

The cold-start study loads Qwen/Qwen2.5-7B-Instruct (bf16, 4 safetensors shards, 15.24 GB). Without the
Hub, `write` puts a checkpoint of the same shape on disk: the model's real config.json and
generation_config.json (as data, below), the tensors `Qwen2ForCausalLM` loads with their real names and
shapes in 4 shards, and a small local tokenizer with Qwen's chat format. It goes into a Hub cache folder
(`models--gpubench-random--Qwen2.5-7B-Instruct/{blobs,snapshots,refs}`), so `snapshot_download` finds it
the way the study's cache check found the real one, and the page cache is evicted "on every blob" as there.

Nothing here imports torch, numpy or transformers: the cold-start worker times those imports itself.
The values are a pool of N(0, 0.02) numbers in bf16, repeated; they are finite, and loading cost does
not depend on them. Writing 15 GB takes a while, so a checkpoint of the same shape already on disk
(its marker file matches) is reused.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import random
import shutil
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from gpubench.measure import timing

REPO_ID = "gpubench-random/Qwen2.5-7B-Instruct"
MARKER = "gpubench-random-checkpoint.json"
WRITER_VERSION = 1
CHUNK_BYTES = 16 << 20

# Qwen/Qwen2.5-7B-Instruct config.json and generation_config.json, with the shape fields filled from Shape.
QWEN2_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
    "initializer_range": 0.02, "max_position_embeddings": 32768, "model_type": "qwen2", "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "use_cache": True, "use_sliding_window": False,
}
QWEN2_GENERATION = {"do_sample": True, "repetition_penalty": 1.05, "temperature": 0.7, "top_p": 0.8, "top_k": 20}
SYSTEM_PROMPT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
# Qwen2.5's chat format for plain messages (its template's tool-calling branches left out).
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\n" + SYSTEM_PROMPT + "<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Words the local tokenizer keeps whole (the study's prompt and the system prompt among them); the rest is bytes.
_WORD_TEXT = (
    "You are Qwen , created by Alibaba Cloud . a helpful assistant system user Say hello in five words "
    "the of and to is it that for on with as was at by this be from or have an they which one you were "
    "her all she there would their we him been has when who will more no if out so said what up its about"
)
WORDS = _WORD_TEXT.split()
# Qwen2's pre-tokenizer split (tokenizer.json of Qwen2.5), before the byte-level mapping.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def _byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: the 256 characters that stand for bytes 0..255, in vocabulary order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    rest = [b for b in range(256) if b not in printable]
    return [chr(b) for b in printable] + [chr(256 + i) for i in range(len(rest))]


def _byte_level(text: str) -> str:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    rest = [b for b in range(256) if b not in printable]
    table = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(rest)}
    return "".join(table[b] for b in text.encode())


def bpe_vocabulary() -> tuple[dict[str, int], list[list[str]]]:
    """A byte-level BPE: the 256 byte symbols, then each word merged left to right.

    Every word after a space first, then bare: a pre-token " word" then starts merging at its space and
    ends as one token, instead of losing its letters to a bare word's merges first.
    """
    vocab = {symbol: i for i, symbol in enumerate(_byte_symbols())}
    merges: list[list[str]] = []
    for prefix in (" ", ""):
        for word in WORDS:
            form = _byte_level(prefix + word)
            for end in range(2, len(form) + 1):
                if form[:end] not in vocab:
                    merges.append([form[:end - 1], form[end - 1]])
                    vocab[form[:end]] = len(vocab)
    return vocab, merges


@dataclass(frozen=True)
class Shape:
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    shards: int

    @property
    def special_ids(self) -> dict[str, int]:
        """Right after the local tokenizer's vocabulary (Qwen2.5's own are 151643-151645, after its 151,643)."""
        first = len(bpe_vocabulary()[0])
        return {token: first + i for i, token in enumerate(SPECIAL_TOKENS)}

    def check(self) -> None:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError(f"hidden_size {self.hidden_size} must divide into num_heads {self.num_heads}, "
                             f"and num_heads into num_kv_heads {self.num_kv_heads}")
        if self.vocab_size <= max(self.special_ids.values()) or self.shards < 1:
            raise ValueError(f"vocab_size must be above {max(self.special_ids.values())} (the local tokenizer's"
                             f" ids) and shards at least 1")

    def fingerprint(self) -> str:
        text = json.dumps({**asdict(self), "writer": WRITER_VERSION}, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()


def tensors(shape: Shape) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every tensor Qwen2ForCausalLM loads, in the model's order."""
    h, ffn = shape.hidden_size, shape.intermediate_size
    kv = shape.num_kv_heads * (h // shape.num_heads)
    out = [("model.embed_tokens.weight", (shape.vocab_size, h))]
    for i in range(shape.num_layers):
        p = f"model.layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", (h, h)), (p + "self_attn.q_proj.bias", (h,)),
            (p + "self_attn.k_proj.weight", (kv, h)), (p + "self_attn.k_proj.bias", (kv,)),
            (p + "self_attn.v_proj.weight", (kv, h)), (p + "self_attn.v_proj.bias", (kv,)),
            (p + "self_attn.o_proj.weight", (h, h)),
            (p + "mlp.gate_proj.weight", (ffn, h)), (p + "mlp.up_proj.weight", (ffn, h)),
            (p + "mlp.down_proj.weight", (h, ffn)),
            (p + "input_layernorm.weight", (h,)), (p + "post_attention_layernorm.weight", (h,)),
        ]
    return out + [("model.norm.weight", (h,)), ("lm_head.weight", (shape.vocab_size, h))]


def _numel(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def split_shards(shape: Shape) -> list[list[tuple[str, tuple[int, ...]]]]:
    """The tensors in `shape.shards` consecutive groups of about equal bytes (as save_pretrained shards)."""
    items = tensors(shape)
    target = sum(_numel(d) * 2 for _, d in items) / shape.shards
    shards: list[list] = [[]]
    size = 0
    for name, dims in items:
        nbytes = _numel(dims) * 2
        if shards[-1] and size + nbytes / 2 > target and len(shards) < shape.shards:
            shards.append([])
            size = 0
        shards[-1].append((name, dims))
        size += nbytes
    return shards


def config_json(shape: Shape) -> dict:
    ids = shape.special_ids
    return {**QWEN2_CONFIG, "hidden_size": shape.hidden_size, "num_hidden_layers": shape.num_layers,
            "max_window_layers": shape.num_layers, "num_attention_heads": shape.num_heads,
            "num_key_value_heads": shape.num_kv_heads, "intermediate_size": shape.intermediate_size,
            "vocab_size": shape.vocab_size, "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"]}


def generation_config_json(shape: Shape) -> dict:
    ids = shape.special_ids
    return {"bos_token_id": ids["<|endoftext|>"], "pad_token_id": ids["<|endoftext|>"],
            "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]], **QWEN2_GENERATION}


def tokenizer_files(shape: Shape) -> dict[str, dict]:
    """tokenizer.json and tokenizer_config.json laid out as Qwen2.5's, with the small vocabulary above."""
    vocab, merges = bpe_vocabulary()
    special = shape.special_ids
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for t, i in special.items()]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {**vocab, **special}, "merges": merges},
    }
    tokenizer_config = {
        "tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "unk_token": None, "errors": "replace", "split_special_tokens": False,
        "model_max_length": 131072, "clean_up_tokenization_spaces": False, "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in added},
    }
    return {"tokenizer.json": tokenizer, "tokenizer_config.json": tokenizer_config}


def _bf16_pool(values: int = 1 << 18, seed: int = 0) -> bytes:
    """`values` N(0, 0.02) numbers as little-endian bf16 (the top half of each float32)."""
    rng = random.Random(seed)
    f32 = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(values))).tobytes()
    out = bytearray(2 * values)
    out[0::2] = f32[2::4]
    out[1::2] = f32[3::4]
    return bytes(out)


def _write_shard(path: Path, group: list[tuple[str, tuple[int, ...]]], chunk: bytes) -> int:
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dims in group:
        nbytes = _numel(dims) * 2
        header[name] = {"dtype": "BF16", "shape": list(dims), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    view = memoryview(chunk)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, len(text).to_bytes(8, "little") + text)
        left, at = offset, 0
        while left:  # the pool over and over; a short write resumes where it stopped, keeping bf16 pairs whole
            written = os.write(fd, view[at:at + min(left, len(view) - at)])
            left -= written
            at = (at + written) % len(view)
        os.fsync(fd)  # on disk, not only in the page cache: the study's files had been written long before
    finally:
        os.close(fd)
    return 8 + len(text) + offset


def _in_threads(jobs) -> None:
    """Run the jobs at once (writes release the GIL: the shards go to disk in parallel); re-raise a failure."""
    errors: list[BaseException] = []

    def run(job) -> None:
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def repo_folder(cache_dir: Path) -> Path:
    return cache_dir / f"models--{REPO_ID.replace('/', '--')}"


def _existing(cache_dir: Path, shape: Shape) -> dict | None:
    """The marker of a complete checkpoint of this shape, when every file is there with its size."""
    repo = repo_folder(cache_dir)
    try:
        marker = json.loads((repo / MARKER).read_text())
    except (OSError, ValueError):
        return None
    snapshot = repo / "snapshots" / marker.get("revision", "-")
    if marker.get("fingerprint") != shape.fingerprint():
        return None
    for name, size in marker.get("files", {}).items():
        file = snapshot / name
        if not file.is_file() or file.stat().st_size != size:
            return None
    return marker


def write(cache_dir: Path, shape: Shape, progress=None) -> dict:
    """Write (or reuse) the checkpoint under `cache_dir` (a Hub cache root); returns what was done."""
    shape.check()
    found = _existing(cache_dir, shape)
    if found:
        return {**found, "reused": True}
    repo = repo_folder(cache_dir)
    shutil.rmtree(repo, ignore_errors=True)  # another shape, or a write that did not finish
    revision = shape.fingerprint()
    blobs, snapshot = repo / "blobs", repo / "snapshots" / revision
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)

    files: dict[str, int] = {}

    def place(name: str, writer) -> None:
        # A blob named after its file and the shape (not a content hash, which would cost a second pass).
        blob = blobs / hashlib.sha256(f"{revision}/{name}".encode()).hexdigest()
        files[name] = writer(blob)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))

    def json_writer(data: dict):
        def write_json(blob: Path) -> int:
            blob.write_text(json.dumps(data, indent=2) + "\n")
            return blob.stat().st_size
        return write_json

    with timing.Timed(None, None) as writing:
        chunk = _bf16_pool() * (CHUNK_BYTES // (2 << 18))
        groups = split_shards(shape)
        names = [f"model-{i:05d}-of-{len(groups):05d}.safetensors" for i in range(1, len(groups) + 1)]
        weight_map = {tensor: name for name, group in zip(names, groups, strict=True) for tensor, _ in group}
        if progress:
            progress(0, len(groups), f"{len(groups)} shards at once")
        _in_threads([lambda name=name, group=group: place(name, lambda blob: _write_shard(blob, group, chunk))
                     for name, group in zip(names, groups, strict=True)])
        if progress:
            progress(len(groups), len(groups), "written and synced")
        total = sum(_numel(d) * 2 for _, d in tensors(shape))
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        place("model.safetensors.index.json", json_writer(index))
        place("config.json", json_writer(config_json(shape)))
        place("generation_config.json", json_writer(generation_config_json(shape)))
        for name, data in tokenizer_files(shape).items():
            place(name, json_writer(data))
    write_s = writing.seconds
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    weights = sum(size for name, size in files.items() if name.endswith(".safetensors"))
    marker = {"repo_id": REPO_ID, "revision": revision, "fingerprint": shape.fingerprint(), "shape": asdict(shape),
              "files": files, "weight_bytes": weights, "write_s": round(write_s, 3),
              "write_gbps": round(weights / write_s / 1e9, 3)}
    (repo / MARKER).write_text(json.dumps(marker, indent=2) + "\n")  # last: its presence means complete
    return {**marker, "reused": False}
