"""The GGUF's making, before any llama.cpp program runs: the synthetic tokenizer's pre-tokenizer is declared qwen2
only when it is Qwen2's, and a Python without the converter's imports is told what to install."""

from __future__ import annotations

import json

import pytest

from gpubench.servers import gguf
from gpubench.servers.llamacpp import Install
from gpubench.servers.tiny_model import TINY, write_qwen2


def test_qwen2_pre_tokenizer_declared_only_for_qwen2s_split(tmp_path):
    folder = write_qwen2(tmp_path / "model", TINY, weights=False)
    assert gguf.declared_pre_tokenizer(folder) == "qwen2"
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\s+|\S+"  # another split: refused
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(gguf.GgufFailed, match="not Qwen2's pre-tokenization"):
        gguf.declared_pre_tokenizer(folder)


def test_without_the_converters_imports_nothing_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(gguf, "missing_modules", lambda: ["torch"])
    install = Install(tmp_path / "bin", {"commit": "0c1e570"})
    with pytest.raises(gguf.ConverterMissing, match="needs torch.*gpubench\\[train\\]"):
        gguf.prepare(TINY, "Q4_K_M", install)
    assert not (tmp_path / "cache").exists()
    with pytest.raises(ValueError, match="Q4_K_M, Q8_0"):
        gguf.prepare(TINY, "Q5_K_M", install)


def test_the_cache_folder_is_keyed_by_shape_and_llamacpp_commit(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path))
    one = gguf.folder_for(TINY, Install(tmp_path, {"commit": "0c1e570"}))
    assert one.parent == tmp_path and one.name.startswith("qwen2-2x128-random-")
    assert gguf.folder_for(TINY, Install(tmp_path, {"commit": "1234567"})) != one
