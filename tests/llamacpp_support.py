"""One real llama-server for the tests that need a server (tools/llamacpp_build.sh's build in .llama-cpp/).

The modules that only talk to a server share one (conftest's `tiny_llamacpp`, session-wide): the smoke's 2-layer
random-weight Qwen2 with the full-vocabulary tokenizer, converted and quantized to Q4_K_M by llama.cpp's own tools
(gpubench/servers/gguf.py, cached), served with the study's flags: 16 slots of 4096 tokens. It starts in seconds. A
test that stops it leaves the next one a fresh server: `running()` starts it again. Its output goes to its log only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench.servers import gguf
from gpubench.servers.llamacpp import LlamaCppFlags, LlamaCppServer, _install_at, source_prefix
from gpubench.servers.tiny_model import TINY

ABSENT = ".llama-cpp is absent: bash tools/llamacpp_build.sh builds llama.cpp there (.ci/run does)"
MODEL = "tiny-qwen2-gguf"
BUILT = _install_at(source_prefix()) is not None


class TinyLlamaCpp:
    def __init__(self, folder: Path):
        self.folder = folder
        self.server: LlamaCppServer | None = None
        self.gguf: gguf.Gguf | None = None

    def running(self) -> LlamaCppServer:
        install = _install_at(source_prefix())
        if install is None:
            pytest.skip(ABSENT)
        if self.server is None or not self.server.running():
            self.gguf = gguf.prepare(TINY, "Q4_K_M", install)
            self.server = LlamaCppServer(LlamaCppFlags(model=str(self.gguf.path), alias=MODEL),
                                         self.folder / "llama-server.log", install=install, echo=False)
            self.server.start()
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
