"""llama-server as gpubench starts it (tools/llamacpp_build.sh's build): Ollama's settings as the server itself
reports them, its memory read off its log, its version, and its token counters."""

from __future__ import annotations

import json
import urllib.request

import pytest
from llamacpp_support import ABSENT, BUILT, MODEL

from gpubench.measure import bandwidth
from gpubench.servers.tiny_model import TINY

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)


def chat(server, max_tokens: int) -> dict:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True}
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def test_sixteen_slots_of_4096_tokens_each(tiny_llamacpp):
    server = tiny_llamacpp.running()
    facts = server.startup_facts()
    assert server.slots() == 16 and facts["slot_context_tokens"] == 4096 and facts["kv_cache_tokens"] == 16 * 4096
    # The KV buffer holds exactly those tokens in f16: 2 layers x 2 KV heads x 64 dims x (K, V) x 2 bytes each
    per_token = bandwidth.model_kv_bytes_per_token(
        {"num_hidden_layers": TINY.num_hidden_layers, "num_key_value_heads": TINY.num_key_value_heads,
         "hidden_size": TINY.hidden_size, "num_attention_heads": TINY.num_attention_heads}, 2)
    assert facts["kv_cache_gib"] == pytest.approx(16 * 4096 * per_token / 2**30, rel=1e-6)
    assert facts["weights_gib"] > 0 and facts["compute_buffer_gib"] > 0
    assert "model_vram_gib" not in facts  # a CPU build: nothing on a GPU
    assert server.props()["total_slots"] == 16


def test_version_names_the_commit_built(tiny_llamacpp):
    server = tiny_llamacpp.running()
    built = server.install.build
    assert built["commit"].startswith("0c1e570") and built["version"] == "0.5.0"
    assert server.version().startswith("0.5.0 (0c1e570, CPU")
    assert "commit 0c1e570" in server.install.reported_version()
    assert server.props()["build_info"].endswith("0c1e570")


def test_counters_count_the_tokens_generated_and_the_prompt_cached(tiny_llamacpp):
    server = tiny_llamacpp.running()
    server.erase_slots()
    before = server.counters()
    first = chat(server, 24)
    again = chat(server, 24)  # the same prompt: its slot still holds it
    after = server.counters()
    assert first["usage"]["completion_tokens"] == again["usage"]["completion_tokens"] == 24
    assert after["generation_tokens"] - before["generation_tokens"] == 48
    prompt = first["usage"]["prompt_tokens"]
    assert after["prompt_tokens"] - before["prompt_tokens"] == 2 * prompt
    assert after["prefix_cache_hits"] - before["prefix_cache_hits"] >= prompt - 1  # the second one's, all but one
    server.erase_slots()
    cleared = server.counters()
    chat(server, 4)
    assert server.counters()["prefix_cache_hits"] == cleared["prefix_cache_hits"]  # erased: nothing cached
