"""The GGUF's making in two steps on the real llama.cpp tools (.llama-cpp/): the bf16 GGUF needs only the converter
(a machine makes it while its quantizer is still being built), and the quantization finds it; the converter imports
its own gguf-py whatever gguf package the Python has."""

from __future__ import annotations

import pytest
from llamacpp_support import ABSENT, BUILT

from gpubench.servers import gguf
from gpubench.servers.llamacpp import Install, _install_at, source_prefix
from gpubench.servers.tiny_model import TINY

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf.CACHE_ENV, str(tmp_path / "gguf"))
    return tmp_path / "gguf"


def test_the_bf16_gguf_needs_no_quantizer_and_the_quantization_finds_it(cache, tmp_path):
    built = _install_at(source_prefix())
    converter_only = tmp_path / "converter"  # a prefix with convert/ and no programs, the same llama.cpp commit
    (converter_only / "bin").mkdir(parents=True)
    (converter_only / "convert").symlink_to(built.prefix / "convert")
    install = Install(converter_only / "bin", {"commit": built.build["commit"]})
    with pytest.raises(Exception, match="llama-quantize"):
        install.program("llama-quantize")
    whole, seconds = gguf.prepare_bf16(TINY, install)
    assert whole.name == "model-BF16.gguf" and set(seconds) == {"checkpoint_s", "convert_s"}
    assert not (whole.parent / "checkpoint").exists() and (whole.parent / "model" / "config.json").exists()
    assert gguf.prepare_bf16(TINY, install) == (whole, {})  # found, nothing run
    made = gguf.prepare(TINY, "Q8_0", built)
    assert made.path.parent == whole.parent and set(made.seconds) == {"quantize_s"}


def test_the_converter_imports_its_own_gguf_py(cache, tmp_path, monkeypatch):
    shadow = tmp_path / "site" / "gguf"  # an installed gguf that must not be the one used
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the installed gguf package was imported')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    whole, seconds = gguf.prepare_bf16(TINY, _install_at(source_prefix()))
    assert whole.stat().st_size > 0 and "convert_s" in seconds
