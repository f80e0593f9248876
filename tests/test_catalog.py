import dataclasses

import pytest

from gpubench.catalog import WORKLOADS, CostBasis
from gpubench.registry import UnknownName, pick
from gpubench.workload import MetricDef, load


def test_the_catalog_holds_each_study_once():
    assert len({spec.study for spec in WORKLOADS}) == len(WORKLOADS)
    for spec in WORKLOADS:
        assert spec.setups and len(set(spec.setups)) == len(spec.setups), spec.name
        assert spec.image.endswith(f"/{spec.name}:" + spec.image.rsplit(":", 1)[1])
        assert spec.max_runtime_minutes > spec.expected_minutes


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(UnknownName) as err:
        WORKLOADS.get("whisperr")
    assert "whisperr" in str(err.value) and "whisper" in str(err.value) and "train-compile" in str(err.value)
    with pytest.raises(UnknownName, match="valid: a, b"):
        pick("setup", ["c"], ["a", "b"])
    assert pick("setup", ["b", "a"], ["a", "b", "c"]) == ["a", "b"]


@pytest.mark.parametrize("spec", [s for s in WORKLOADS if s.implemented], ids=lambda s: s.name)
def test_implemented_workloads_keep_the_contract(spec):
    definition = load(spec)  # every check of the contract (gpubench/workload.py) runs here
    assert {f.name for f in dataclasses.fields(definition.config)} >= set(definition.smoke)
    assert all(isinstance(d, MetricDef) for d in definition.metrics.values())
    assert tuple(definition.setups) == spec.setups


def test_cost_basis_rate_and_seconds():
    rate = CostBasis(metric="tokens_per_s", unit="1M tokens", per=1e6)
    # The study's RTX 5090 row: 41,870 tokens/s at $1.15/h is 131M tokens per dollar.
    assert 1 / rate.usd_per_unit(41_870, 1.15) == pytest.approx(131.07, rel=1e-3)
    per_start = CostBasis(metric="total_s", unit="start", per=1, kind="seconds")
    # The cold-start study: 54.5 s at $0.54/h cost $0.0082.
    assert per_start.usd_per_unit(54.5, 0.54) == pytest.approx(0.0082, abs=5e-5)
    assert rate.usd_per_unit(0, 1.0) is None
