"""Cost is computed in one function, `pricing.cost_metrics`, called by the harness only (the runner, `report` for a run
stored without costs, `gpubench loadgen`): no workload imports the catalog or pricing, or is given the price. A cost
a workload needs beyond its catalog basis is declared (MetricDef(cost_of=..., role=COST_ROLE): embed's tuned rate)
and the harness computes it at the run's price."""

from __future__ import annotations

import ast
import dataclasses
import io
from pathlib import Path

import pytest

from gpubench import pricing
from gpubench.catalog import WORKLOADS
from gpubench.run.runner import Runner, RunRequest
from gpubench.schema import COST_ROLE, Metric, SetupResult
from gpubench.stores import RunDir
from gpubench.workload import MetricDef, SetupContext, WorkloadDefinition, WorkloadError, build_config, load

WORKLOADS_DIR = Path(__file__).resolve().parent.parent / "workloads"
PRICING = ("gpubench.pricing", "gpubench.catalog")  # what costs a result: the catalog's bases and their prices


def pricing_imports(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [f"{name}:{node.lineno}: {m}" for m in modules if m.startswith(PRICING)]
    return found


def test_the_check_finds_a_workload_that_costs_itself():
    source = "from gpubench import pricing\nfrom gpubench.catalog import WORKLOADS\nimport gpubench.pricing as p\n"
    assert pricing_imports(source, "w.py") == ["w.py:1: gpubench.pricing", "w.py:2: gpubench.catalog.WORKLOADS",
                                               "w.py:3: gpubench.pricing"]


def test_no_workload_costs_its_own_results():
    modules = sorted(WORKLOADS_DIR.rglob("*.py"))
    assert len(modules) > 20
    found = [hit for path in modules for hit in pricing_imports(path.read_text(), str(path.relative_to(WORKLOADS_DIR)))]
    assert found == [], "declare the cost (MetricDef(cost_of=...)); the harness computes it:\n" + "\n".join(found)
    assert "price_usd_per_hour" not in {f.name for f in dataclasses.fields(SetupContext)}  # nor is given the price


EMBED = load(WORKLOADS.get("embed"))
RATES = {"passages_per_s": Metric(value=2000.0, unit="passages/s"),
         "tuned_passages_per_s": Metric(value=5000.0, unit="passages/s")}


def test_the_one_function_costs_the_basis_and_each_declared_cost():
    costs = pricing.cost_metrics(EMBED.spec.cost, RATES, 3.6, EMBED.metrics)
    # $3.60/h = $0.001/s; 1M passages at 2,000/s take 500 s, at 5,000/s 200 s
    assert costs["usd_per_1M_passages"].value == pytest.approx(0.5)
    assert costs["tuned_usd_per_1M_passages"].value == pytest.approx(0.2)
    assert costs["tuned_usd_per_1M_passages"].role == COST_ROLE and costs["1M_passages_per_usd"].value == 2.0
    assert pricing.cost_metrics(EMBED.spec.cost, RATES, None, EMBED.metrics) == {}  # no price, no cost
    plain = {"passages_per_s": RATES["passages_per_s"]}  # no tuned rate measured: no tuned cost
    assert "tuned_usd_per_1M_passages" not in pricing.cost_metrics(EMBED.spec.cost, plain, 3.6, EMBED.metrics)


def test_the_runner_costs_a_workloads_declared_cost_at_the_runs_price(tmp_path):
    request = RunRequest(spec=EMBED.spec, setups=["bge-small-128"], repeats=1, smoke=True, run_id="r",
                         config=build_config(EMBED, True, {}), price_usd_per_hour=3.6, weights="random")
    runner = Runner(request, RunDir.create(tmp_path, "r", echo=io.StringIO()), echo=lambda text: None)
    result = SetupResult(run_id="r", setup="bge-small-128", repeat=1, status="ok", metrics=dict(RATES))
    assert runner._costed(result).metrics["tuned_usd_per_1M_passages"].value == pytest.approx(0.2)


def test_a_declared_cost_must_name_a_declared_metric_and_say_it_is_a_cost():
    def with_metrics(**extra) -> None:
        WorkloadDefinition(**{**{f.name: getattr(EMBED, f.name) for f in dataclasses.fields(EMBED)},
                              "metrics": {**EMBED.metrics, **extra}})._check("embed")

    with_metrics(x=MetricDef("USD/1M passages", "lower", role=COST_ROLE, cost_of="tuned_passages_per_s"))
    with pytest.raises(WorkloadError, match="is a cost of 'nothing'"):
        with_metrics(x=MetricDef("USD/1M passages", "lower", role=COST_ROLE, cost_of="nothing"))
    with pytest.raises(WorkloadError, match="role=COST_ROLE"):
        with_metrics(x=MetricDef("USD/1M passages", "lower", cost_of="tuned_passages_per_s"))
