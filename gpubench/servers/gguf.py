"""A quantized GGUF of the random-weight Qwen2 checkpoint, made with llama.cpp's own tools and cached on disk.

Ollama's qwen2.5:7b-instruct-q4_K_M and -q8_0 are GGUFs that llama.cpp's convert_hf_to_gguf.py and
llama-quantize made from Qwen's checkpoint. Without the Hub this makes the same from the random-weight checkpoint
at the same shape (tiny_model.py: its config, the full-vocabulary tokenizer, N(0, 0.02) weights in bf16):
checkpoint -> `convert_hf_to_gguf.py --outtype bf16` (the checkpoint's own dtype: a copy, no rounding) ->
`llama-quantize` to Q4_K_M or Q8_0, each step timed. The
result is cached by shape, quantization, tokenizer format and the llama.cpp commit, under $GPUBENCH_GGUF_DIR, else
${XDG_CACHE_HOME:-~/.cache}/gpubench/gguf/ (as the tokenizers are); the bf16 GGUF stays there too, so the second
quantization skips the checkpoint and the conversion (at Qwen2.5-7B's shape: 15 GB each). `prepare_bf16` makes that
bf16 GGUF alone, with only the converter (a device call makes it while its quantizer is still being built). The
converter imports its own gguf-py (the tree's, ahead of any installed gguf package), checked.

The converter names a BPE tokenizer's pre-tokenizer by hashing how it encodes a fixed text, and refuses a tokenizer
it has not seen. The synthetic tokenizer's pre-tokenizer is Qwen2's (full_vocab_tokenizer.py: NFC, Qwen2's split
regex, byte-level), which llama.cpp implements as `qwen2`; its vocabulary differs, so its hash is unknown. The
conversion therefore runs with the pre-tokenizer declared `qwen2`, after checking that tokenizer.json's normalizer
and split regex are Qwen2's (`declared_pre_tokenizer`); the GGUF records it as tokenizer.ggml.pre = "qwen2".
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpubench.servers import full_vocab_tokenizer
from gpubench.servers.llamacpp import Install
from gpubench.servers.tiny_model import Qwen2Shape, tensor_shapes, write_qwen2

FORMAT = 1  # part of the cache key: bump when the checkpoint or the conversion changes
QUANTS = {"Q4_K_M": "q4_k_m", "Q8_0": "q8_0"}  # llama-quantize's type -> Ollama's tag suffix
SHARD_BYTES = 4 << 30


class GgufFailed(RuntimeError):
    """A step of the GGUF's making failed; str() names the step and ends with its output's tail."""


class ConverterMissing(GgufFailed):
    """This Python lacks what llama.cpp's converter (and the checkpoint writer) import; str() says what to install."""


CONVERTER_MODULES = ("torch", "transformers", "safetensors", "numpy", "yaml")


def missing_modules() -> list[str]:
    import importlib.util

    return [name for name in CONVERTER_MODULES if importlib.util.find_spec(name) is None]


@dataclass
class Gguf:
    path: Path
    quant: str
    cached: bool  # found made before: no step ran
    seconds: dict[str, float] = field(default_factory=dict)  # checkpoint_s, convert_s, quantize_s of the steps run

    @property
    def model_folder(self) -> Path:
        """The source checkpoint's config.json and tokenizer files, kept beside the GGUF (for prompts of exact
        token lengths and the decode's bytes per token)."""
        return self.path.parent / "model"

    def info(self) -> dict:
        return {"file": str(self.path), "bytes": self.path.stat().st_size, "quant": self.quant, "cached": self.cached,
                "made_by": "llama.cpp's convert_hf_to_gguf.py (bf16; a random checkpoint's pre-tokenizer declared"
                           " qwen2) and llama-quantize",
                **({"seconds": self.seconds} if self.seconds else {})}


CACHE_ENV = "GPUBENCH_GGUF_DIR"  # the images set it to their /cache volume


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "gpubench" / "gguf"


def folder_for(shape: Qwen2Shape, install: Install, checkpoint: Path | None = None, seed: int = 0) -> Path:
    """The cache folder of one source's GGUFs (the random checkpoint at `shape`, or a checkpoint folder), keyed by
    everything that changes their bytes."""
    engine = install.build.get("commit") or install.reported_version() or "unknown"
    if checkpoint is None:
        key, name = [asdict(shape), full_vocab_tokenizer.FORMAT, seed], f"qwen2-{shape.num_hidden_layers}x" \
                                                                         f"{shape.hidden_size}-random"
    else:
        key, name = [str(checkpoint.resolve()), (checkpoint / "config.json").read_text()], checkpoint.resolve().name
    digest = hashlib.sha256(json.dumps([FORMAT, engine, *key]).encode()).hexdigest()[:16]
    return cache_root() / f"{name}-{digest}"


def prepare(shape: Qwen2Shape, quant: str, install: Install, progress=None, threads: int = 0,
            checkpoint: Path | None = None) -> Gguf:
    """The GGUF of `checkpoint` (a Qwen2 folder), or of the random checkpoint at `shape`, quantized to `quant`
    (Q4_K_M or Q8_0): from the cache, else made (a lock keeps two runs from making it at once)."""
    if quant not in QUANTS:
        raise ValueError(f"quantization {quant!r}: use one of {', '.join(QUANTS)}")
    folder = folder_for(shape, install, checkpoint)
    target = folder / f"model-{quant}.gguf"
    if target.exists():
        return Gguf(target, quant, cached=True)
    _check_modules(f"making the {quant} GGUF")
    with _locked(folder):
        if target.exists():
            return Gguf(target, quant, cached=True)
        seconds: dict[str, float] = {}
        whole = _bf16(folder, shape, install, progress, checkpoint, seconds)
        with _timed(seconds, "quantize_s", progress, f"llama-quantize {quant}"):
            quantize(install, whole, target, quant, threads)
    return Gguf(target, quant, cached=False, seconds=seconds)


def prepare_bf16(shape: Qwen2Shape, install: Install, progress=None,
                 checkpoint: Path | None = None) -> tuple[Path, dict[str, float]]:
    """The bf16 GGUF that `prepare` quantizes, alone (made, or found), with the seconds of the steps that ran: it
    needs only the converter, so a machine can make it while its quantizer is still being built."""
    folder = folder_for(shape, install, checkpoint)
    _check_modules("making the bf16 GGUF")
    seconds: dict[str, float] = {}
    with _locked(folder):
        return _bf16(folder, shape, install, progress, checkpoint, seconds), seconds


def _check_modules(what: str) -> None:
    if missing := missing_modules():
        raise ConverterMissing(f"{what} needs {', '.join(missing)} in this Python (llama.cpp's"
                               " convert_hf_to_gguf.py imports them): install torch for this machine and"
                               " pip install 'gpubench[train]'")


@contextlib.contextmanager
def _locked(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _bf16(folder: Path, shape: Qwen2Shape, install: Install, progress, checkpoint: Path | None,
          seconds: dict[str, float]) -> Path:
    """folder/model-BF16.gguf, converted from the checkpoint (the random one written first, and removed after)
    unless it is there; the checkpoint's config and tokenizer files are kept beside it in folder/model."""
    whole = folder / "model-BF16.gguf"
    if whole.exists():
        return whole
    source = checkpoint or folder / "checkpoint"
    if checkpoint is None:
        shutil.rmtree(source, ignore_errors=True)
        with _timed(seconds, "checkpoint_s", progress, "random checkpoint"):
            write_checkpoint(source, shape)
    with _timed(seconds, "convert_s", progress, "convert_hf_to_gguf.py --outtype bf16"):
        # the random tokenizer's pre-tokenizer is declared (module docstring); a real one is recognised
        convert(install, source, whole, pre=None if checkpoint else declared_pre_tokenizer(source))
    kept = folder / "model"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir()
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        if (source / name).exists():
            shutil.copy2(source / name, kept / name)
    if checkpoint is None:
        shutil.rmtree(source)
    return whole


@contextlib.contextmanager
def _timed(seconds: dict[str, float], name: str, progress, message: str):
    if progress:
        progress("gguf", message=message)
    started = time.perf_counter()
    yield
    seconds[name] = time.perf_counter() - started


def write_checkpoint(folder: Path, shape: Qwen2Shape, seed: int = 0) -> Path:
    """tiny_model's Qwen2 folder (config, full-vocabulary tokenizer) with bf16 N(0, 0.02) weights in shards of at
    most SHARD_BYTES (model-00001.safetensors, ...: the converter reads every model*.safetensors), drawn by torch
    on all cores: Qwen2.5-7B's 7.6 billion values in seconds, not minutes."""
    import torch
    from safetensors.torch import save_file

    write_qwen2(folder, shape, weights=False)
    generator = torch.Generator().manual_seed(seed)
    shard: dict[str, torch.Tensor] = {}
    written = 0
    for name, (dims, init) in tensor_shapes(shape).items():
        tensor = torch.ones(dims, dtype=torch.bfloat16) if init == "ones" else \
            (torch.randn(dims, generator=generator) * 0.02).to(torch.bfloat16)
        if shard and sum(t.numel() for t in shard.values()) * 2 + tensor.numel() * 2 > SHARD_BYTES:
            written += 1
            save_file(shard, str(folder / f"model-{written:05d}.safetensors"), metadata={"format": "pt"})
            shard = {}
        shard[name] = tensor
    save_file(shard, str(folder / f"model-{written + 1:05d}.safetensors"), metadata={"format": "pt"})
    return folder


def declared_pre_tokenizer(folder: Path) -> str:
    """'qwen2' when tokenizer.json's normalizer and pre-tokenizer are Qwen2's (NFC, its split regex, byte-level),
    which llama.cpp's `qwen2` pre-tokenizer implements; anything else is refused."""
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    normalizer = (tokenizer.get("normalizer") or {}).get("type")
    steps = (tokenizer.get("pre_tokenizer") or {}).get("pretokenizers") or []
    split = next((s for s in steps if s.get("type") == "Split"), {})
    regex = (split.get("pattern") or {}).get("Regex")
    if normalizer != "NFC" or regex != full_vocab_tokenizer.QWEN2_SPLIT or \
            [s.get("type") for s in steps] != ["Split", "ByteLevel"]:
        raise GgufFailed(f"{folder}/tokenizer.json is not Qwen2's pre-tokenization (normalizer {normalizer},"
                         f" steps {[s.get('type') for s in steps]}, split {regex!r}): its llama.cpp pre-tokenizer"
                         " cannot be declared qwen2")
    return "qwen2"


def convert(install: Install, checkpoint: Path, out: Path, outtype: str = "bf16", pre: str | None = None) -> None:
    """llama.cpp's convert_hf_to_gguf.py on the checkpoint, in a Python of its own (it imports torch); `pre`, when
    given, is the BPE pre-tokenizer it records instead of the one it looks up by hash."""
    if install.converter is None:
        raise GgufFailed(f"no convert_hf_to_gguf.py beside {install.bin_dir} (bash tools/llamacpp_build.sh installs"
                         " it in convert/)")
    partial = out.with_suffix(".partial")
    _run("convert_hf_to_gguf.py", [sys.executable, "-m", "gpubench.servers.gguf", str(install.converter.parent),
                                   pre or "-", str(checkpoint), "--outfile", str(partial), "--outtype", outtype])
    partial.replace(out)


def quantize(install: Install, source: Path, out: Path, quant: str, threads: int = 0) -> None:
    partial = out.with_suffix(".partial")
    _run("llama-quantize", [install.program("llama-quantize"), str(source), str(partial), quant,
                            *([str(threads)] if threads else [])])
    partial.replace(out)


def _run(step: str, argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise GgufFailed(f"{step} exited with code {done.returncode}:\n{tail}")


def _convert_main(argv: list[str]) -> None:
    """`python -m gpubench.servers.gguf CONVERTER_DIR PRE CHECKPOINT [converter args]`: convert_hf_to_gguf.py's
    own main, with every BPE model's pre-tokenizer answered as PRE instead of looked up by hash (`-`: looked up),
    and without needing the sentencepiece package for a checkpoint that has no tokenizer.model."""
    import runpy

    converter_dir, pre, *args = argv
    sys.path[:0] = [converter_dir, str(Path(converter_dir) / "gguf-py")]
    import gguf  # the converter's own gguf-py, ahead of any installed gguf package (PyPI's may be another version)
    from conversion import base  # the converter's package (llama.cpp's conversion/), found through converter_dir

    if not Path(gguf.__file__).resolve().is_relative_to(Path(converter_dir).resolve()):
        raise SystemExit(f"gguf was imported from {gguf.__file__}, not from {converter_dir}/gguf-py")

    if pre != "-":
        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
    sentencepiece_vocab = base.TextModel._create_vocab_sentencepiece

    def no_tokenizer_model_first(self):
        # Qwen2's set_vocab tries a SentencePiece tokenizer.model first and falls back to BPE on FileNotFoundError,
        # but imports sentencepiece before looking for the file: without that package (not a dependency of a BPE
        # model's conversion) the fallback is never reached. The file is looked for first here.
        if not (self.dir_model / "tokenizer.model").is_file():
            raise FileNotFoundError(f"File not found: {self.dir_model / 'tokenizer.model'}")
        return sentencepiece_vocab(self)

    base.TextModel._create_vocab_sentencepiece = no_tokenizer_model_first
    script = str(Path(converter_dir) / "convert_hf_to_gguf.py")
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    _convert_main(sys.argv[1:])
