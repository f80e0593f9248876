"""Results stored before schema 1.2 read as today's (gpubench/schema.py): one peak-memory figure for every
workload, `peak_mem_gib` (gpubench/measure/gpu_memory.py; tests/test_memory_tracker.py), of the device the setup
ran on, where they had six names in two units, the posts' GB in reference.csv likewise, and a verdict kept in info
as the typed field."""

from __future__ import annotations

import json

import pytest

from gpubench import reference
from gpubench.schema import PEAK_MEMORY, Derived, SetupResult, parse_record


def stored(metrics: dict, kind: str = "result") -> str:
    record = {"schema_version": "1.1", "run_id": "r", "ts": "2026-11-30T00:00:00.000000Z", "kind": kind,
              "setup": "a", "repeat": 1,
              "metrics": {k: {"value": v, "unit": u, "better": "lower"} for k, (v, u) in metrics.items()}}
    if kind == "result":
        record.update(status="ok", error=None, device="cuda:0 NVIDIA H200", duration_s=1.0, info={})
    return json.dumps(record)


@pytest.mark.parametrize(("name", "value", "unit", "gib"), [
    ("peak_mem_gb", 17.38, "GB", 17.38e9 / 2**30), ("peak_vram_gb", 6.7, "GB", 6.7e9 / 2**30),
    ("peak_rss_gb", 2.0, "GB", 2e9 / 2**30), ("peak_mem_gib", 36.22, "GiB", 36.22),
    ("peak_rss_gib", 1.5, "GiB", 1.5), ("peak_gpu_mem_gib", 9.5, "GiB", 9.5)])
def test_an_old_name_reads_as_the_one_figure_in_gib(name, value, unit, gib):
    result = parse_record(stored({name: (value, unit), "tokens_per_s": (100.0, "tokens/s")}))
    assert isinstance(result, SetupResult)
    assert list(result.metrics) == [PEAK_MEMORY, "tokens_per_s"]
    m = result.metrics[PEAK_MEMORY]
    assert (m.value, m.unit, m.better) == (pytest.approx(gib), "GiB", "lower")


def test_a_gpu_peak_wins_over_the_hosts_rss_whatever_the_order():
    for order in (("peak_rss_gib", "peak_gpu_mem_gib"), ("peak_gpu_mem_gib", "peak_rss_gib")):
        values = {"peak_rss_gib": (3.0, "GiB"), "peak_gpu_mem_gib": (9.0, "GiB")}
        result = parse_record(stored({name: values[name] for name in order}))
        assert {k: m.value for k, m in result.metrics.items()} == {PEAK_MEMORY: 9.0}


def test_embeds_tuned_peak_and_derived_records_too():
    result = parse_record(stored({"tuned_peak_mem_gb": (1.0, "GB")}))
    assert result.metrics["tuned_peak_mem_gib"].value == pytest.approx(1e9 / 2**30)
    derived = parse_record(stored({"peak_mem_gb": (2.0, "GB")}, kind="derived"))
    assert isinstance(derived, Derived) and derived.metrics[PEAK_MEMORY].value == pytest.approx(2e9 / 2**30)


def test_the_posts_gb_read_in_gib():
    row = next(r for r in reference.published()
               if (r.workload, r.gpu, r.setup, r.metric) == ("train-compile", "L40S", "eager-sdpa", PEAK_MEMORY))
    assert row.value == pytest.approx(17.3e9 / 2**30)  # the post's 17.3 GB


def test_a_verdict_kept_in_info_before_1_2_reads_as_the_typed_field():
    record = json.loads(stored({"x": (1.0, "u")}))
    record["info"] = {"verdict": "host-bound", "verdict_basis": "GPU busy 14%", "verdict_figures": {"gpu_busy_pct": 14},
                      "model": "m"}
    result = parse_record(json.dumps(record))
    assert (result.verdict.label, result.verdict.basis, result.verdict.figures) == (
        "host-bound", "GPU busy 14%", {"gpu_busy_pct": 14.0})
    assert result.info == {"model": "m"}
