"""A llama-server that dies in the middle of a load: that setup is one failed row saying so, and the setup measured
before it on the same server keeps its result."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from clirun import gpubench, run_folder
from llamacpp_support import ABSENT, BUILT

from gpubench.servers.llamacpp import source_prefix

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)

# The real llama-server, killed with SIGKILL when it starts its KILL_AT-th request. The smoke's session sends one
# chat request, then u1's 2 warm-up and 6 timed requests, then u4's 8 warm-up requests: the 19th is u4's second
# timed one.
WRAPPER = """#!/usr/bin/env bash
real={real}
case " $* " in *" --version "*|*" --help "*) exec "$real" "$@" ;; esac
coproc SERVER {{ exec "$real" "$@" 2>&1; }}
pid=$SERVER_PID
trap 'kill -INT $pid' INT TERM
n=0
while IFS= read -r line <&"${{SERVER[0]}}"; do
  printf '%s\\n' "$line"
  case "$line" in *"processing task"*) n=$((n + 1)); [ "$n" -eq {kill_at} ] && kill -9 "$pid" ;; esac
done
wait "$pid"
"""


def dying_build(folder, kill_at: int):
    real = source_prefix()
    (folder / "bin").mkdir(parents=True)
    for name in os.listdir(real / "bin"):
        if name != "llama-server":
            (folder / "bin" / name).symlink_to(real / "bin" / name)
    server = folder / "bin" / "llama-server"
    server.write_text(WRAPPER.format(real=real / "bin" / "llama-server", kill_at=kill_at))
    server.chmod(0o755)
    (folder / "convert").symlink_to(real / "convert")
    shutil.copy(real / "build-info.json", folder / "build-info.json")
    return folder


def test_a_server_killed_mid_load_fails_that_setup_alone(tmp_path):
    build = dying_build(tmp_path / "llama.cpp", kill_at=19)
    result = gpubench("run", "ollama-vs-vllm", "--smoke", "--setups", "llamacpp-q4km-u1,llamacpp-q4km-u4",
                      cwd=tmp_path, env={"GPUBENCH_LLAMACPP_DIR": str(build)}, timeout=600)
    assert result.code == 1, result.stderr[-3000:]
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    assert rows["llamacpp-q4km-u1"]["status"] == "ok"
    assert rows["llamacpp-q4km-u1"]["metrics"]["tokens_streamed_pct"]["value"] == 100.0
    failed = rows["llamacpp-q4km-u4"]
    assert failed["status"] == "error"
    assert "llama.cpp exited with code 137" in failed["error"] and "during the load" in failed["error"]
    stored = [json.loads(line) for line in (run_folder(result.stderr, tmp_path) / "results.jsonl").open()]
    assert [r["status"] for r in stored if r["kind"] == "result"] == ["ok", "error"]
