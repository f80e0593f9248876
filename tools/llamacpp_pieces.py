"""What a device call carries to build or run llama.cpp on the H200 (docs/gpu-llamacpp.md), one file each.

    python tools/llamacpp_pieces.py source              # .llamacpp-h200/llama.cpp-src.tar.xz: the trimmed source
    python tools/llamacpp_pieces.py prebuilt PREFIX     # .llamacpp-h200/llama.cpp-prebuilt.tar.xz: a built prefix
    python tools/llamacpp_pieces.py prebuilt BUILD --source SRC   # the same from a CMake build folder of SRC

`source`: the llama.cpp tree PyPI's llama-cpp-python sdist vendors (the version tools/llamacpp_build.sh builds),
without what a build does not read: the sdist's .git pack, the vocabulary GGUFs and test files of models/, docs/,
media/ and the multimodal tool's sample media. GPUBENCH-SOURCE.json at its top says where it came from (package,
version, the sdist's sha256, the llama.cpp commit); `tools/llamacpp_build.sh --source FILE` builds from it.
`prebuilt`: a prefix tools/llamacpp_build.sh installed (bin/, convert/, build-info.json), for a call that unpacks
it instead of compiling; or a CMake build folder of llama.cpp (its bin/ and CMakeCache.txt) with the source tree it
was configured from (`--source`), laid out as such a prefix: the three programs and the shared libraries beside
them, the converter from the source, and a build-info.json read off the CMake cache. Both are tar.xz (the device
has python3's lzma but no zstd), members sorted with fixed owners and times, so the same input packs to the same
bytes; each says its size against the carry limit.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpubench.servers.llamacpp import SOURCE_VERSION  # noqa: E402

PACKAGE = "llama-cpp-python"
CARRY_LIMIT = 64 << 20
OUT_DIR = ROOT / ".llamacpp-h200"
DROP = re.compile(r"^(?:\.git(?:/|$)|models/.*\.gguf|models/ggml-vocab-|docs/|media/|tools/mtmd/test-\d)")


def sdist(cache: Path, path: str = "") -> Path:
    """The sdist: the given file, else pip's download (cached in `cache`)."""
    if path:
        return Path(path)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d",
                    str(cache), f"{PACKAGE}=={SOURCE_VERSION}"], check=True)
    return cache / f"llama_cpp_python-{SOURCE_VERSION}.tar.gz"


def _fixed(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    info.pax_headers = {}  # a long name read from a pax archive keeps its old path there, which a writer would use
    return info


def pack_source(source: Path, out: Path) -> dict:
    """The trimmed llama.cpp tree of the sdist `source`, as out (tar.xz under llama.cpp/)."""
    top = f"llama_cpp_python-{SOURCE_VERSION}/"
    vendor = top + "vendor/llama.cpp/"
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    commit = None
    with tarfile.open(source, "r:gz") as tar:
        for info in tar:
            if info.name == top + ".git/modules/vendor/llama.cpp/HEAD":
                commit = tar.extractfile(info).read().decode().strip()
            if not info.name.startswith(vendor) or DROP.search(info.name[len(vendor):]):
                continue
            data = tar.extractfile(info).read() if info.isfile() else None
            info.name = "llama.cpp/" + info.name[len(vendor):]
            members.append((info, data))
    if commit is None or not members:
        raise SystemExit(f"{source}: not llama-cpp-python {SOURCE_VERSION}'s sdist (no vendor/llama.cpp or its HEAD)")
    about = {"package": PACKAGE, "version": SOURCE_VERSION, "commit": commit,
             "sdist_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
             "dropped": "the sdist's .git pack, models/ vocabulary GGUFs and their test files, docs/, media/,"
                        " tools/mtmd's sample media"}
    text = json.dumps(about, indent=2).encode()
    stamp = tarfile.TarInfo("llama.cpp/GPUBENCH-SOURCE.json")
    stamp.size = len(text)
    members.append((stamp, text))
    _write(out, members)
    return about


def pack_prefix(prefix: Path, out: Path) -> dict:
    """A built prefix (bin/, convert/, build-info.json) as out (tar.xz under llama.cpp/)."""
    info_file = prefix / "build-info.json"
    if not (prefix / "bin" / "llama-server").exists() or not info_file.exists():
        raise SystemExit(f"{prefix}: not a prefix tools/llamacpp_build.sh installed (bin/llama-server and"
                         " build-info.json)")
    members = []
    for path in sorted(prefix.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        info = tarfile.TarInfo("llama.cpp/" + path.relative_to(prefix).as_posix())
        stat = path.lstat()
        if path.is_symlink():
            info.type, info.linkname = tarfile.SYMTYPE, str(path.readlink())
            members.append((info, None))
        elif path.is_dir():
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            members.append((info, None))
        else:
            data = path.read_bytes()
            info.size, info.mode = len(data), stat.st_mode & 0o777
            members.append((info, data))
    _write(out, members)
    return json.loads(info_file.read_text())


def prefix_from_build(build: Path, source: Path, staged: Path) -> Path:
    """A CMake build folder of llama.cpp laid out as tools/llamacpp_build.sh's prefix, in `staged`."""
    import shutil

    cache = dict(re.findall(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", (build / "CMakeCache.txt").read_text(), re.MULTILINE))
    bin_dir = staged / "bin"
    bin_dir.mkdir(parents=True)
    for path in sorted((build / "bin").iterdir()):
        if path.name in ("llama-server", "llama-quantize", "llama-bench") or path.name.startswith("lib"):
            shutil.copy2(path, bin_dir / path.name, follow_symlinks=False)
    missing = [p for p in ("llama-server", "llama-quantize", "llama-bench") if not (bin_dir / p).exists()]
    if missing:
        raise SystemExit(f"{build}/bin lacks {', '.join(missing)}: build those targets first")
    (staged / "convert" / "gguf-py").mkdir(parents=True)
    shutil.copy2(source / "convert_hf_to_gguf.py", staged / "convert")
    shutil.copytree(source / "conversion", staged / "convert" / "conversion")
    shutil.copytree(source / "gguf-py" / "gguf", staged / "convert" / "gguf-py" / "gguf")
    about = json.loads((source / "GPUBENCH-SOURCE.json").read_text()) if (source / "GPUBENCH-SOURCE.json").exists() \
        else {}

    def version(cmake: Path, name: str) -> str:
        text = cmake.read_text()
        return ".".join(re.search(rf"set\({name}_VERSION_{part}\s+(\d+)\)", text).group(1)
                        for part in ("MAJOR", "MINOR", "PATCH"))

    cuda = cache.get("GGML_CUDA") == "ON"
    info = {"engine": "llama.cpp", "version": version(source / "CMakeLists.txt", "LLAMA"),
            "ggml_version": version(source / "ggml" / "CMakeLists.txt", "GGML"), "commit": about.get("commit"),
            "source": f"PyPI {PACKAGE}=={SOURCE_VERSION} (sdist), vendor/llama.cpp",
            "source_sha256": about.get("sdist_sha256"), "cmake_flags": sorted(
                f"-D{k}={v}" for k, v in cache.items()
                if k.startswith(("GGML_CUDA", "GGML_NATIVE", "CMAKE_CUDA_ARCHITECTURES", "BUILD_SHARED_LIBS",
                                 "CMAKE_BUILD_TYPE", "LLAMA_BUILD_"))),
            "compiler": cache.get("CMAKE_CXX_COMPILER"), "cuda": {"architectures": cache.get(
                "CMAKE_CUDA_ARCHITECTURES"), "nvcc": cache.get("CMAKE_CUDA_COMPILER")} if cuda else None,
            "cpu": "native" if cache.get("GGML_NATIVE") == "ON" else "portable",
            "packed_from": f"the CMake build folder {build}"}
    (staged / "build-info.json").write_text(json.dumps(info, indent=2))
    return staged


def _write(out: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    with lzma.open(partial, "wb", preset=9) as stream, tarfile.open(fileobj=stream, mode="w|") as tar:
        for info, data in sorted(members, key=lambda m: m[0].name):
            tar.addfile(_fixed(info), io.BytesIO(data) if data is not None else None)
    partial.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    src = sub.add_parser("source", help="the trimmed llama.cpp source of the pinned sdist")
    src.add_argument("--sdist", default="", help="an sdist file instead of pip's download")
    src.add_argument("--out", type=Path, default=OUT_DIR / "llama.cpp-src.tar.xz")
    src.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "gpubench" / "llama.cpp" / "sdist")
    pre = sub.add_parser("prebuilt", help="a built prefix, packed")
    pre.add_argument("prefix", type=Path, help="a prefix tools/llamacpp_build.sh installed, or a CMake build folder")
    pre.add_argument("--source", type=Path, help="with a build folder: the llama.cpp tree it was configured from")
    pre.add_argument("--out", type=Path, default=OUT_DIR / "llama.cpp-prebuilt.tar.xz")
    args = parser.parse_args(argv)
    if args.what == "source":
        about = pack_source(sdist(args.cache, args.sdist), args.out)
        what = f"llama.cpp {about['commit'][:7]} from {PACKAGE} {about['version']}"
    elif (args.prefix / "CMakeCache.txt").exists():
        if args.source is None:
            parser.error("a CMake build folder needs --source, the llama.cpp tree it was built from")
        with tempfile.TemporaryDirectory() as tmp:
            about = pack_prefix(prefix_from_build(args.prefix, args.source, Path(tmp) / "prefix"), args.out)
    else:
        about = pack_prefix(args.prefix, args.out)
        what = f"llama.cpp {about.get('version')} ({(about.get('commit') or '')[:7]}), cuda {about.get('cuda')}"
    size = args.out.stat().st_size
    fits = "fits" if size <= CARRY_LIMIT - (8 << 20) else "does NOT fit"
    print(f"{args.out}: {what}, {size:,} bytes ({size / 2**20:.1f} MiB; {fits} one call's 64 MiB with 8 MiB for the"
          " working tree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
