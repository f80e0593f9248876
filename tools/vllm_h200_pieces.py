"""Build the carried vLLM pieces for the H200 device from the package registry (docs/gpu-serving.md).

    python tools/vllm_h200_pieces.py            # download (cached), unpack, strip, pack, split into .vllm-h200/
    python tools/vllm_h200_pieces.py --check    # verify the pieces in .vllm-h200/ against their manifest

The device has the CUDA torch stack but not vLLM or its server-side dependencies, and a device call carries at
most 64 MiB of files. So the vLLM wheel and the wheels of tools/vllm_h200_wheels.txt are fetched for the
device's Python (cp312, manylinux x86_64), unzipped into one site-packages tree, stripped of what a dense bf16/FP8
server on sm90 never loads (tools/vllm_h200_pieces.json), packed as one tar.xz stream (the device has python3
but no zstd) and split into equal pieces, one folder per device call: OUT/c1/piece0, OUT/c2/piece1, ... Each
folder also holds manifest.json (sizes and sha256 of every piece and of the whole stream), so the call that
brings the last piece can verify and unpack them (benchmarks/gpu_vllm_env.sh).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import lzma
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "tools" / "vllm_h200_wheels.txt"
SPEC = ROOT / "tools" / "vllm_h200_pieces.json"
DEFAULT_OUT = ROOT / ".vllm-h200"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpubench" / "vllm-h200-wheels"
MANIFEST = "manifest.json"
STREAM = "site.tar.xz"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")
_CALL_DIR = re.compile(r"^c\d+$")
_PIECE = re.compile(r"^piece\d+$")
_CHUNK = 1 << 20


class BadInput(Exception):
    """A flag or data file the build cannot start with: one line, exit 2."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def read_pins(path: Path) -> list[tuple[str, str]]:
    """[(name, version)] from `name==version` lines; blank lines and # comments are skipped."""
    pins = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PIN.match(line)
        if not match:
            raise BadInput(f"{path}:{number}: not name==version: {line!r}")
        pins.append((match[1], match[2]))
    if not pins:
        raise BadInput(f"{path}: no wheels listed")
    return pins


def cached_wheel(cache: Path, name: str, version: str) -> Path | None:
    """The wheel of name==version already in the cache, if there is exactly one."""
    found = [p for p in cache.glob("*.whl")
             if [canonical(part) for part in p.name.split("-")[:2]] == [canonical(name), canonical(version)]]
    if len(found) > 1:
        raise BadInput(f"{cache}: more than one wheel of {name}=={version}: {', '.join(p.name for p in found)}")
    return found[0] if found else None


def download(pins: list[tuple[str, str]], cache: Path, spec: dict) -> tuple[list[Path], int]:
    """The wheel file of every pin, fetching only those not cached yet; (wheels, how many were fetched)."""
    missing = [f"{name}=={version}" for name, version in pins if cached_wheel(cache, name, version) is None]
    if missing:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                   "--python-version", spec["python_version"], "--implementation", spec["implementation"],
                   "--dest", str(cache)]
        for platform in spec["platforms"]:
            command += ["--platform", platform]
        subprocess.run(command + missing, check=True)
    wheels = []
    for name, version in pins:
        wheel = cached_wheel(cache, name, version)
        if wheel is None:
            raise RuntimeError(f"pip did not leave a wheel of {name}=={version} in {cache}")
        wheels.append(wheel)
    return wheels, len(missing)


def tree_path(member: str) -> str | None:
    """Where a wheel member goes in site-packages: .data/purelib and .data/platlib are merged into the root as
    pip does; the other .data/ folders (scripts, headers, data) are dropped (None)."""
    top, _, rest = member.partition("/")
    if not top.endswith(".data"):
        return member
    scheme, _, inner = rest.partition("/")
    return inner if scheme in ("purelib", "platlib") and inner else None


def build_tree(wheels: list[Path], tree: Path, strip: list[str]) -> list[str]:
    """Unzip every wheel into tree (emptied first), then remove the strip paths. Returns the paths removed;
    a strip path that is not in the tree is an error, since a stale list would silently carry it."""
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                target = None if info.is_dir() else tree_path(info.filename)
                if target is None:
                    continue
                destination = tree / target
                if tree.resolve() not in destination.resolve().parents:
                    raise RuntimeError(f"{wheel.name}: {info.filename} points outside the tree")
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, open(destination, "wb") as sink:
                    shutil.copyfileobj(source, sink, _CHUNK)
                mode = (info.external_attr >> 16) & 0o777
                destination.chmod(0o755 if mode & 0o111 else 0o644)
    absent = [path for path in strip if not (tree / path).exists()]
    if absent:
        raise RuntimeError(f"strip paths not in the tree (is the strip list stale?): {', '.join(absent)}")
    for path in strip:
        target = tree / path
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    return strip


def tree_size(tree: Path) -> tuple[int, int]:
    """(files, bytes) of a tree."""
    files = [p for p in tree.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # the same wheels give the same stream, byte for byte, whoever builds them and when
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    if info.isdir():
        info.mode = 0o755
    return info


def pack(tree: Path, stream: Path, preset: int) -> None:
    """tree as one tar.xz stream, members in sorted order with fixed owners and times."""
    with lzma.open(stream, "wb", preset=preset) as compressed, tarfile.open(fileobj=compressed, mode="w") as tar:
        for path in sorted(tree.rglob("*")):
            tar.add(path, arcname=path.relative_to(tree).as_posix(), recursive=False, filter=_reset)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def travelling_bytes(repo: Path) -> int:
    """What the working tree adds to every device call: its tracked files and the untracked ones git does not
    ignore."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    total = 0
    for name in filter(None, listed):
        path = repo / os.fsdecode(name)
        if path.is_symlink() or path.is_file():
            total += path.lstat().st_size
    return total


def clear_pieces(out: Path) -> None:
    """Remove an earlier build's pieces and manifests (only those: OUT may hold other things)."""
    for call in out.iterdir():
        if call.is_dir() and _CALL_DIR.match(call.name):
            for item in call.iterdir():
                if item.is_file() and (_PIECE.match(item.name) or item.name == MANIFEST):
                    item.unlink()
            if not any(call.iterdir()):
                call.rmdir()


def split(stream: Path, out: Path, max_piece: int) -> list[dict]:
    """Cut stream into the fewest equal pieces of at most max_piece bytes: OUT/c<i+1>/piece<i>."""
    total = stream.stat().st_size
    count = max(1, math.ceil(total / max_piece))
    size = math.ceil(total / count)
    pieces = []
    with open(stream, "rb") as source:
        for index in range(count):
            name = f"c{index + 1}/piece{index}"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            digest, left = hashlib.sha256(), size
            with open(out / name, "wb") as sink:
                while left and (block := source.read(min(_CHUNK, left))):
                    sink.write(block)
                    digest.update(block)
                    left -= len(block)
            pieces.append({"name": name, "bytes": (out / name).stat().st_size, "sha256": digest.hexdigest()})
    return pieces


def write_manifests(out: Path, manifest: dict) -> None:
    """The same manifest in every call folder: a call keeps only the folders it carries."""
    text = json.dumps(manifest, indent=1) + "\n"
    for piece in manifest["pieces"]:
        (out / piece["name"]).parent.joinpath(MANIFEST).write_text(text)


def check(out: Path) -> list[str]:
    """What is wrong with the pieces in out against their manifest; empty when they are whole."""
    texts = {path: path.read_text() for path in sorted(out.glob(f"c*/{MANIFEST}"))}
    if not texts:
        return [f"no {MANIFEST} under {out}/c*/"]
    if len(set(texts.values())) > 1:
        return [f"the manifests differ: {', '.join(str(p) for p in texts)}"]
    manifest = json.loads(next(iter(texts.values())))
    problems, whole = [], hashlib.sha256()
    for piece in manifest["pieces"]:
        path = out / piece["name"]
        if not path.is_file():
            problems.append(f"{piece['name']}: missing")
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(_CHUNK), b""):
                digest.update(block)
                whole.update(block)
        if path.stat().st_size != piece["bytes"] or digest.hexdigest() != piece["sha256"]:
            problems.append(f"{piece['name']}: {path.stat().st_size} bytes, sha256 {digest.hexdigest()}; "
                            f"manifest: {piece['bytes']} bytes, sha256 {piece['sha256']}")
    if not problems and whole.hexdigest() != manifest["stream"]["sha256"]:
        problems.append(f"the joined pieces' sha256 {whole.hexdigest()} is not the manifest's "
                        f"{manifest['stream']['sha256']}")
    return problems


def writable_dir(path: Path, flag: str) -> Path:
    """path when it is, or can be made, a folder files can be written to; BadInput otherwise. The trial folder is
    removed again, so that bad input leaves no trace."""
    existing = path.absolute()
    while not existing.exists():
        existing = existing.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-test-", dir=existing))
    except OSError as error:
        where = "" if existing == path.absolute() else f" ({existing} is the closest path that exists)"
        raise BadInput(f"{flag} {path}: cannot be written{where}: {error.strerror or error}") from None
    return path


def load_spec(path: Path) -> dict:
    try:
        spec = json.loads(path.read_text())
        for key in ("python_version", "implementation", "platforms", "strip", "xz_preset",
                    "carry_limit_bytes", "carry_headroom_bytes"):
            spec[key]  # noqa: B018 (present, or one line about which is not)
    except (OSError, ValueError, KeyError) as error:
        raise BadInput(f"{path}: not a usable spec ({error})") from None
    return spec


class Steps:
    """Prints each step with how long it took."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def done(self, what: str, since: float) -> float:
        now = time.monotonic()
        print(f"{what} ({now - since:.1f} s)", flush=True)
        return now


def build(out: Path, cache: Path, pins: list[tuple[str, str]], spec: dict, max_piece: int, travelling: int) -> dict:
    steps = Steps()
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    wheels, fetched = download(pins, cache, spec)
    t = steps.done(f"wheels: {len(wheels)} in {cache} ({fetched} fetched, {len(wheels) - fetched} cached)", steps.start)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        tree = work / "site"
        stripped = build_tree(wheels, tree, spec["strip"])
        files, tree_bytes = tree_size(tree)
        t = steps.done(f"tree: {files} files, {tree_bytes:,} bytes ({len(stripped)} strip paths removed)", t)
        stream = work / STREAM
        pack(tree, stream, spec["xz_preset"])
        stream_bytes = stream.stat().st_size
        t = steps.done(f"packed: {STREAM} {stream_bytes:,} bytes (xz preset {spec['xz_preset']})", t)
        clear_pieces(out)
        pieces = split(stream, out, max_piece)
        manifest = {
            "vllm": dict(pins).get("vllm"),
            "format": "tar.xz, split: cat the pieces in order",
            "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "stream": {"bytes": stream_bytes, "sha256": sha256(stream)},
            "tree": {"files": files, "bytes": tree_bytes},
            "pieces": pieces,
            "max_piece_bytes": max_piece,
            "working_tree_bytes": travelling,
            "stripped": stripped,
            "wheels": [{"file": w.name, "sha256": sha256(w)} for w in wheels],
        }
        write_manifests(out, manifest)
        steps.done(f"split: {len(pieces)} piece(s) of at most {max_piece:,} bytes (the working tree travels "
                   f"{travelling:,} bytes with each): " + ", ".join(f"{p['name']} {p['bytes']:,}" for p in pieces), t)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"stream sha256 {manifest['stream']['sha256']}; built in {time.monotonic() - steps.start:.1f} s")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the pieces go (default {DEFAULT_OUT})")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"the downloaded wheels, reused on the next run (default {DEFAULT_CACHE})")
    parser.add_argument("--check", action="store_true", help="verify the pieces in --out against their manifest")
    parser.add_argument("--wheels", type=Path, default=WHEELS, help="name==version lines (default %(default)s)")
    parser.add_argument("--spec", type=Path, default=SPEC,
                        help="platforms, strip list, carry limit (default %(default)s)")
    parser.add_argument("--max-piece", type=int, metavar="BYTES",
                        help="largest piece (default: the carry limit less the headroom and the working tree)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            if not args.out.is_dir():
                raise BadInput(f"--out {args.out}: no such folder")
            t = time.monotonic()
            problems = check(args.out)
            for problem in problems:
                print(problem)
            print(f"{'pieces do not match' if problems else 'pieces match'} {args.out}/c*/{MANIFEST} "
                  f"({time.monotonic() - t:.1f} s)")
            return 1 if problems else 0
        if args.max_piece is not None and args.max_piece < 1:
            raise BadInput(f"--max-piece {args.max_piece}: must be at least 1 byte")
        pins, spec = read_pins(args.wheels), load_spec(args.spec)
        writable_dir(args.out, "--out")
        writable_dir(args.cache, "--cache")
    except BadInput as error:
        print(f"vllm_h200_pieces: {error}", file=sys.stderr)
        return 2
    travelling = travelling_bytes(ROOT)
    max_piece = args.max_piece or spec["carry_limit_bytes"] - spec["carry_headroom_bytes"] - travelling
    if max_piece < 1:
        print(f"vllm_h200_pieces: the working tree ({travelling:,} bytes) leaves no room under the carry limit",
              file=sys.stderr)
        return 2
    build(args.out, args.cache, pins, spec, max_piece, travelling)
    return 0


if __name__ == "__main__":
    sys.exit(main())
