"""Each latency's mean sits beside its percentiles, as vLLM's benchmark and AIPerf report it."""

import pytest

from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.metrics import summarize


def test_a_skewed_ttft_has_its_mean_apart_from_its_median():
    records = [RequestRecord(index=i, ok=True, sent=0.0, ttft_s=ttft, last_token_s=ttft + 0.03, e2e_s=ttft + 0.03,
                             tokens_received=4) for i, ttft in enumerate((0.010, 0.020, 0.090))]
    m = summarize(records, 1.0)
    assert m["ttft_ms_p50"] == pytest.approx(20) and m["ttft_ms_mean"] == pytest.approx(40)
    assert m["e2e_ms_mean"] == pytest.approx(70) and m["tpot_ms_mean"] == pytest.approx(10)
