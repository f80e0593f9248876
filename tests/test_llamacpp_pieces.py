"""tools/llamacpp_pieces.py: the trimmed llama.cpp source a device call carries, from an sdist laid out as
llama-cpp-python's (here a small one made by the test)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest
from repo_tools import load

pieces = load("llamacpp_pieces")
TOP = f"llama_cpp_python-{pieces.SOURCE_VERSION}/"
KEPT = ["CMakeLists.txt", "src/llama.cpp", "convert_hf_to_gguf.py", "models/templates/Qwen-Qwen2.5.jinja",
        "tools/mtmd/mtmd.cpp",  # and a path past the 100 characters of a plain tar header (a pax header holds it)
        "ggml/src/ggml-cuda/template-instances/fattn-mma-f16-instance-ncols1_1-ncols2_16.cu"]
DROPPED = [".git", "models/ggml-vocab-qwen2.gguf", "models/ggml-vocab-qwen2.gguf.inp", "docs/build.md",
           "media/llama0-logo.png", "tools/mtmd/test-1.jpeg"]


def sdist(path, commit="0c1e57098bba43ac29e6e3b677cdceebdd22334f"):
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:  # as PyPI's sdist is
        for name, text in [(TOP + ".git/modules/vendor/llama.cpp/HEAD", commit + "\n"), (TOP + "setup.py", "x"),
                           *((TOP + "vendor/llama.cpp/" + n, n) for n in KEPT + DROPPED)]:
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return path


def test_source_keeps_what_a_build_reads_and_says_where_it_came_from(tmp_path):
    src = sdist(tmp_path / "sdist.tar.gz")
    about = pieces.pack_source(src, tmp_path / "a.tar.xz")
    with tarfile.open(tmp_path / "a.tar.xz") as tar:
        names = sorted(m.name for m in tar.getmembers())
        stamp = json.loads(tar.extractfile("llama.cpp/GPUBENCH-SOURCE.json").read())
    assert names == sorted(["llama.cpp/" + n for n in KEPT] + ["llama.cpp/GPUBENCH-SOURCE.json"])
    assert stamp == about and stamp["commit"].startswith("0c1e570") and stamp["version"] == pieces.SOURCE_VERSION
    assert stamp["sdist_sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    pieces.pack_source(src, tmp_path / "b.tar.xz")  # the same sdist packs to the same bytes
    assert (tmp_path / "a.tar.xz").read_bytes() == (tmp_path / "b.tar.xz").read_bytes()


def test_an_sdist_without_llamacpp_is_refused(tmp_path):
    path = tmp_path / "other.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo(TOP + "setup.py"), io.BytesIO(b""))
    with pytest.raises(SystemExit, match="not llama-cpp-python"):
        pieces.pack_source(path, tmp_path / "out.tar.xz")
