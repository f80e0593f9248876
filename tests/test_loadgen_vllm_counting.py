"""Against the real vLLM (the CPU build), plain `run_load` finds how to count a chunk's tokens from the server itself
(GET /version: vLLM; a probe: return_token_ids), counts every token the server counted, and reads its gauges of
requests running and waiting through the timed phase."""

from __future__ import annotations

import pytest
from vllm_support import ABSENT, MODEL, VLLM_PYTHON

from gpubench.loadgen import server_gauges
from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec

pytestmark = pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=ABSENT)


def test_plain_run_load_counts_vllms_tokens_and_reads_its_gauges(tiny_vllm, monkeypatch):
    server = tiny_vllm.running()
    # a timed phase of many gauge intervals (the sampler has read the gauges once before the load starts, so busy
    # cores only lengthen it), with long answers: on busy cores vLLM's API process is the bottleneck, a request spends
    # most of its time there, where the engine's gauges do not count it, and 64-token answers left every read at 0
    # running (6 reads, TTFT p50 626 ms against 66 ms of decode); 384 tokens keep the engine busy for longer. The
    # gauges are read every 50 ms, not every 500: 14 reads at 500 ms once all came at 0 running on 2 busy cores
    monkeypatch.setattr(server_gauges, "INTERVAL_S", 0.05)
    run = run_load(LoadSpec(base_url=server.base_url, model=MODEL, users=4, requests=12, warmup=2, input_tokens=32,
                            output_tokens=384, ignore_eos=True))
    counting, gauges = run.info()["token_counting"], run.info()["server_gauges"]
    assert counting["way"] == "token_ids" and counting["server"].startswith("vllm ")
    assert counting["tokens_counted"] == counting["server_counted"] == 12 * 384
    assert run.metrics()["usage_mismatches"] == 0
    assert gauges["asked"] == 4 and gauges.get("samples", 0) >= 2, gauges  # (a note says why there are none)
    assert gauges["interval_s"] == 0.05
    assert 0 < gauges["running"]["max"] <= 4, gauges
