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
    # the gauges read every 50 ms through a timed phase of many intervals (the sampler has read them once before the
    # load starts), and the result says that interval
    monkeypatch.setattr(server_gauges, "INTERVAL_S", 0.05)
    run = run_load(LoadSpec(base_url=server.base_url, model=MODEL, users=4, requests=8, warmup=2, input_tokens=32,
                            output_tokens=96, ignore_eos=True))
    counting, gauges = run.info()["token_counting"], run.info()["server_gauges"]
    assert counting["way"] == "token_ids" and counting["server"].startswith("vllm ")
    assert counting["tokens_counted"] == counting["server_counted"] == 8 * 96
    assert run.metrics()["usage_mismatches"] == 0
    assert gauges["asked"] == 4 and gauges.get("samples", 0) >= 2, gauges  # (a note says why there are none)
    assert gauges["source"] == "/metrics vllm:num_requests_running, vllm:num_requests_waiting"
    assert gauges["interval_s"] == 0.05
    # Not asserted: a read above 0 running. On 2 busy cores the CPU engine finishes the answers long before vLLM's
    # API process has streamed them, and that process answers /metrics between its backlog's batches, when the last
    # engine step it has read is often the empty one: 16 reads all came at 0 (12-07). The values themselves are held
    # against a server of known timing (test_loadgen_server_gauges.py).
    assert 0 <= gauges["running"]["max"] <= 4 and 0 <= gauges["waiting"]["max"] <= 4, gauges
