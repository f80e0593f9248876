"""`gpubench run ollama-vs-vllm --smoke`: its llama.cpp rows on a real llama-server (tools/llamacpp_build.sh), the
Ollama rows skipped with their reason where no ollama binary is."""

from __future__ import annotations

import pytest
from clirun import gpubench
from llamacpp_support import ABSENT, BUILT

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)
LLAMACPP = [f"llamacpp-{build}-{part}" for build in ("q4km", "q8") for part in ("u1", "u4", "u16", "gsm8k")]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("smoke")
    result = gpubench("run", "ollama-vs-vllm", "--smoke", "--setups", ",".join([*LLAMACPP, "ollama-q4km-u1"]),
                      "--price", "3.86", cwd=cwd, env={"PATH": "/usr/bin:/bin"}, timeout=900)
    return result


def rows(smoke) -> dict[str, dict]:
    return {r["setup"]: r for r in smoke.records() if r["kind"] == "result"}


def test_llamacpp_rows_ok_with_every_token_streamed_and_counted(smoke):
    assert smoke.code == 0, smoke.stderr[-3000:]
    found = rows(smoke)
    for setup in LLAMACPP:
        row = found[setup]
        m = {k: v["value"] for k, v in row["metrics"].items()}
        assert row["status"] == "ok", (setup, row.get("error"))
        assert m["tokens_streamed_pct"] == 100.0, setup
        assert m.get("usage_mismatches", 0) == 0, setup
        if setup.endswith("-gsm8k"):
            assert m["gsm8k_total"] == 4 and m["gsm8k_wall_s"] > 0, setup
        else:
            assert m["usd_per_1M_output_tokens"] > 0 and m["client_cpu_pct"] > 0, setup
            assert row["info"]["load"]["token_counting"]["way"] == "timings", setup  # llama.cpp's timings_per_token
            assert m["llama_server_thread_pct"] > 0, setup  # the server's slot thread, sampled under its role
        assert row["info"]["engine"].startswith("llama.cpp's llama-server 0.5.0 (0c1e570")
        assert row["info"]["engine"].endswith("Ollama's runner without Ollama")
        if setup.endswith("-u16"):
            assert "slo_met" in m or "goodput_tokens_per_s" in m, sorted(m)


def test_each_session_reports_its_gguf_and_memory_once(smoke):
    found = rows(smoke)
    for build, quant in (("q4km", "Q4_K_M"), ("q8", "Q8_0")):
        first = found[f"llamacpp-{build}-u1"]
        m = {k: v["value"] for k, v in first["metrics"].items()}
        assert m["slot_context_tokens"] == 4096 and m["kv_cache_tokens"] == 16 * 4096
        assert m["weights_gib"] > 0 and m["kv_cache_gib"] > 0 and m["server_ready_s"] > 0
        assert first["info"]["gguf"]["quant"] == quant and first["info"]["gguf"]["file"].endswith(f"{quant}.gguf")
        assert "--parallel" in first["info"]["server_args"] and first["info"]["server_build"]["commit"]
        assert first["info"]["server"] == "llamacpp"
        assert "server_ready_s" not in found[f"llamacpp-{build}-u4"]["metrics"]  # once per session


def test_ollama_rows_are_skipped_saying_why(smoke):
    row = rows(smoke)["ollama-q4km-u1"]
    assert row["status"] == "skipped" and "ollama binary" in row["error"]


def test_environment_records_the_llamacpp_build(smoke):
    env = smoke.records()[0]["environment"]
    assert env["libraries"]["llama.cpp"].startswith("0.5.0 (0c1e570")
