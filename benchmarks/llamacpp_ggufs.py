"""ollama-vs-vllm's two GGUFs made ahead of its run, in the steps a device call can overlap with llama.cpp's build
(benchmarks/gpu_llamacpp.sh prepare):

    python3 benchmarks/llamacpp_ggufs.py bf16 --converter DIR --source-info FILE     # needs no llama.cpp program
    python3 benchmarks/llamacpp_ggufs.py quantize --llamacpp-dir PREFIX --threads N   # a build with llama-quantize
    python3 benchmarks/llamacpp_ggufs.py check                                        # both there for `gpubench run`

`bf16` writes the random checkpoint at the shape's size and converts it with the converter in DIR (a llama.cpp source
tree: convert_hf_to_gguf.py, conversion/, gguf-py/), keyed in the GGUF cache by the commit that FILE
(GPUBENCH-SOURCE.json of tools/llamacpp_pieces.py's trimmed source) names, the commit every build from that source
records; `quantize` makes Q4_K_M and Q8_0 from it with that build's llama-quantize (a prefix of
tools/llamacpp_build.sh, llama-server not needed) and, with --drop-bf16-below-gib, removes the bf16 GGUF when the
disk has less free; `check` says whether `gpubench run` would find both made, for the build it finds
($GPUBENCH_LLAMACPP_DIR), so a run never starts by making a 15 GB checkpoint. Each prints a line per step and a JSON
summary last (seconds and bytes of each step).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from gpubench.servers import gguf
from gpubench.servers.llamacpp import BUILD_INFO, Install, find
from gpubench.servers.tiny_model import QWEN25_7B, TINY

SHAPES = {"study": QWEN25_7B, "tiny": TINY}


def say(*_, message=None, **__) -> None:
    if message:
        print(message, flush=True)


def converter_install(converter: Path, source_info: Path) -> Install:
    """An Install that is only a converter: a prefix whose convert/ is the source tree, keyed by its commit."""
    commit = json.loads(source_info.read_text())["commit"]
    if not (converter / "convert_hf_to_gguf.py").is_file():
        raise SystemExit(f"{converter} has no convert_hf_to_gguf.py")
    prefix = Path(tempfile.mkdtemp(prefix="gpubench-converter-"))
    (prefix / "bin").mkdir()
    (prefix / "convert").symlink_to(converter.resolve())
    return Install(prefix / "bin", {"commit": commit})


def quantizer_install(prefix: Path) -> Install:
    build = json.loads((prefix / BUILD_INFO).read_text())
    install = Install(prefix / "bin", build)
    install.program("llama-quantize")
    return install


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("bf16", "quantize", "check"))
    parser.add_argument("--shape", choices=tuple(SHAPES), default="study")
    parser.add_argument("--converter", type=Path, help="bf16: a llama.cpp source tree")
    parser.add_argument("--source-info", type=Path, help="bf16: its GPUBENCH-SOURCE.json (the commit)")
    parser.add_argument("--llamacpp-dir", type=Path, help="quantize: a build prefix with bin/llama-quantize")
    parser.add_argument("--quant", action="append", choices=tuple(gguf.QUANTS), help="repeatable; default both")
    parser.add_argument("--threads", type=int, default=0, help="llama-quantize's threads; 0: its default")
    parser.add_argument("--drop-bf16-below-gib", type=float, default=0.0,
                        help="quantize: remove the bf16 GGUF after, when the disk has less free than this")
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    quants = args.quant or list(gguf.QUANTS)
    summary: dict = {"step": args.step, "shape": args.shape}
    if args.step == "bf16":
        if not args.converter or not args.source_info:
            parser.error("bf16 needs --converter and --source-info")
        install = converter_install(args.converter, args.source_info)
        try:
            whole, seconds = gguf.prepare_bf16(shape, install, progress=say)
        finally:
            shutil.rmtree(install.prefix)
        summary.update(file=str(whole), bytes=whole.stat().st_size, seconds=seconds, commit=install.build["commit"])
    elif args.step == "quantize":
        if not args.llamacpp_dir:
            parser.error("quantize needs --llamacpp-dir")
        install = quantizer_install(args.llamacpp_dir)
        made = {quant: gguf.prepare(shape, quant, install, progress=say, threads=args.threads) for quant in quants}
        summary.update(commit=install.build.get("commit"), threads=args.threads,
                       ggufs={quant: m.info() for quant, m in made.items()})
        whole = gguf.folder_for(shape, install) / "model-BF16.gguf"
        free_gib = shutil.disk_usage(whole.parent).free / 2**30
        if args.drop_bf16_below_gib and whole.exists() and free_gib < args.drop_bf16_below_gib:
            whole.unlink()
            summary["bf16_removed"] = f"{free_gib:.1f} GiB free < {args.drop_bf16_below_gib:g}"
        summary["disk_free_gib"] = round(shutil.disk_usage(whole.parent).free / 2**30, 1)
    else:
        install = find()
        folder = gguf.folder_for(shape, install)
        found = {quant: (folder / f"model-{quant}.gguf").exists() for quant in quants}
        summary.update(build=install.version(), folder=str(folder), found=found)
        print(json.dumps(summary))
        if not all(found.values()):
            print(f"not made for this build ({install.version()}) in {folder}: run `gpu_llamacpp.sh prepare` first",
                  file=sys.stderr)
            return 1
        return 0
    print(json.dumps(summary, indent=2))
    steps = summary.get("seconds") or {q: g.get("seconds", "cached") for q, g in summary.get("ggufs", {}).items()}
    print(f"made: {json.dumps(steps)}" + (f"; {summary['bf16_removed']}" if "bf16_removed" in summary else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
