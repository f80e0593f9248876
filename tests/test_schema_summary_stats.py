"""The run summary's statistics on data that tells median from mean (odd and even counts, unsorted, an
outlier), every field against values worked out by hand, and each metric's better/worse direction."""

from __future__ import annotations

import math

import pytest

from gpubench.catalog import WORKLOADS, CostBasis
from gpubench.pricing import cost_metrics
from gpubench.schema import Metric, SetupResult, summarize, summarize_results


def test_odd_count_unsorted_with_an_outlier():
    # sorted 1 3 4 7 100; mean 115/5 = 23; squared deviations 484+400+361+256+5929 = 7430; 7430/4 = 1857.5
    s = summarize("ms", [7.0, 1.0, 4.0, 100.0, 3.0])
    assert (s.unit, s.n, s.median, s.min, s.max, s.mean) == ("ms", 5, 4.0, 1.0, 100.0, 23.0)
    assert s.stdev == pytest.approx(math.sqrt(1857.5), rel=1e-12)  # the sample stdev (n - 1), 43.0987...
    assert s.cv == pytest.approx(math.sqrt(1857.5) / 23.0, rel=1e-12)


def test_even_count_unsorted_takes_the_middle_two():
    # sorted 2 3 6 9: median (3 + 6) / 2 = 4.5; mean 5; squared deviations 9+4+1+16 = 30; 30/3 = 10
    s = summarize("tokens/s", [9.0, 2.0, 6.0, 3.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (4, 4.5, 2.0, 9.0, 5.0)
    assert s.stdev == pytest.approx(math.sqrt(10.0), rel=1e-12)
    assert s.cv == pytest.approx(math.sqrt(10.0) / 5.0, rel=1e-12)


def test_two_values_and_one_value():
    s = summarize("s", [8.0, 2.0])
    assert (s.n, s.median, s.min, s.max, s.mean) == (2, 5.0, 2.0, 8.0, 5.0)
    assert s.stdev == pytest.approx(math.sqrt(18.0), rel=1e-12)  # (9 + 9) / 1
    one = summarize("s", [2.5])
    assert (one.n, one.median, one.min, one.max, one.mean, one.stdev, one.cv) == (1, 2.5, 2.5, 2.5, 2.5, 0.0, 0.0)


def test_a_mean_of_zero_has_no_cv():
    s = summarize("x", [-1.0, 1.0, 0.0])
    assert (s.median, s.mean, s.stdev, s.cv) == (0.0, 0.0, 1.0, None)


def result(setup, repeat, status="ok", **values):
    metrics = {name: Metric(value=value, unit=f"{name}-unit", better="higher") for name, value in values.items()}
    return SetupResult(run_id="r", setup=setup, repeat=repeat, status=status, metrics=metrics,
                       error=None if status == "ok" else status)


def test_setup_summaries_over_unsorted_repeats_with_a_failure_between():
    rows = [result("a", 1, t=30.0, m=1.0), result("a", 2, "error"), result("a", 3, t=10.0),
            result("a", 4, t=80.0, m=5.0), result("b", 1, "oom"), result("b", 2, "oom"),
            result("c", 1, "oom"), result("c", 2, "error"), result("d", 1, "error"), result("d", 2, "oom"),
            result("e", 1, "skipped")]
    summary = {s.setup: s for s in summarize_results(["a", "b", "c", "d", "e", "f"], rows)}
    a = summary["a"]
    assert (a.status, a.ok_repeats, a.repeats) == ("ok", 3, 4)
    assert list(a.metrics) == ["t", "m"]
    t, m = a.metrics["t"], a.metrics["m"]
    assert (t.unit, t.n, t.median, t.min, t.max, t.mean) == ("t-unit", 3, 30.0, 10.0, 80.0, 40.0)
    assert t.stdev == pytest.approx(math.sqrt((100 + 900 + 1600) / 2), rel=1e-12)
    assert (m.unit, m.n, m.median, m.mean) == ("m-unit", 2, 3.0, 3.0)  # only the repeats that reported it
    assert (summary["b"].status, summary["b"].ok_repeats, summary["b"].repeats) == ("oom", 0, 2)
    assert summary["c"].status == "error"  # not all out of memory: the last failure says
    assert summary["d"].status == "oom"
    assert summary["e"].status == "skipped" and summary["e"].repeats == 1
    # no result at all: the run ended before it (an interrupted run), which is not a stated reason to skip
    assert (summary["f"].status, summary["f"].repeats, summary["f"].metrics) == ("not-run", 0, {})
    assert [s.setup for s in summarize_results(["f", "a"], rows)] == ["f", "a"]


def test_cost_metrics_point_the_right_way():
    rate = WORKLOADS.get("train-compile").cost
    assert rate.kind == "rate"
    usd, per_usd = (cost_metrics(WORKLOADS.get("train-compile").cost, {rate.metric: Metric(value=2000.0, unit="x")},
                                 3.6).values())
    slug = rate.unit.replace(" ", "_")
    seconds = rate.per / 2000.0
    assert usd.model_dump() == {"value": pytest.approx(3.6 * seconds / 3600), "unit": f"USD/{rate.unit}",
                                "better": "lower", "role": "cost"}
    assert per_usd.model_dump() == {"value": pytest.approx(3600 / (3.6 * seconds)), "unit": f"{rate.unit}/USD",
                                    "better": "higher", "role": "value"}
    names = cost_metrics(WORKLOADS.get("train-compile").cost, {rate.metric: Metric(value=2000.0, unit="x")}, 3.6)
    assert list(names) == [f"usd_per_{slug}", f"{slug}_per_usd"]


def test_a_seconds_basis_costs_the_time_spent():
    basis = CostBasis(metric="total_s", unit="start", per=1, kind="seconds")
    assert basis.usd_per_unit(90.0, 2.0) == pytest.approx(2.0 * 90 / 3600)
    assert basis.usd_per_unit(0.0, 2.0) is None
    rate = CostBasis(metric="tokens_per_s", unit="1M tokens", per=1e6)
    assert rate.usd_per_unit(1e6 / 3600, 5.0) == pytest.approx(5.0)
    assert rate.usd_per_unit(-1.0, 5.0) is None


def test_no_cost_without_the_basis_metric_or_a_price_that_counts():
    spec = WORKLOADS.get("train-compile")
    assert cost_metrics(spec.cost, {"other": Metric(value=1.0, unit="x")}, 3.6) == {}
    assert cost_metrics(spec.cost, {spec.cost.metric: Metric(value=0.0, unit="x")}, 3.6) == {}

