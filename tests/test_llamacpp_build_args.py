"""tools/llamacpp_build.sh's --targets: an unknown target is one line and exit 2 before anything is made, and the
default three keep the cache key they had before the option (a machine's cached build stays found)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from llamacpp_support import ABSENT, BUILT

from gpubench.servers.llamacpp import source_prefix

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "llamacpp_build.sh"


def build(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("targets", ["llama-foo", "llama-server llama-cli"])
def test_an_unknown_target_is_refused_before_anything_is_made(tmp_path, targets):
    done = build("--targets", targets, "--prefix", str(tmp_path / "prefix"), "--work", str(tmp_path / "work"),
                 cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"llamacpp_build.sh: --targets {targets.split()[-1]}: one of llama-server llama-quantize llama-bench"]
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "work").exists()


@pytest.mark.skipif(not BUILT, reason=ABSENT)
def test_the_default_targets_keep_the_key_of_the_build_made_before(tmp_path):
    key = json.loads((source_prefix() / "build-info.json").read_text())["key"]
    done = build(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"llama.cpp ready in {source_prefix()} (build {key})"
