"""What kind of figure a metric is (peak memory, cost, value, energy, energy per unit) is declared once with the metric
(MetricDef.role), carried by the record (schema 1.4), and read from there: the summary's, report's and site's memory,
cost and energy columns follow the role, never a name's substring. A record stored before 1.4 reads its roles from
the harness's names (schema.legacy_role); a name nothing declares has no role and is a plain figure."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from gpubench import pricing
from gpubench.catalog import WORKLOADS
from gpubench.measure import energy, gpu_memory
from gpubench.results import report, site, stored_runs, summary
from gpubench.run import runner
from gpubench.schema import (
    COST_ROLE,
    ENERGY_PER_UNIT_ROLE,
    ENERGY_ROLE,
    PEAK_MEMORY,
    PEAK_MEMORY_ROLE,
    VALUE_ROLE,
    Metric,
    RunFinished,
    SetupResult,
    legacy_role,
    parse_record,
    summarize_results,
    to_line,
)
from gpubench.workload import MetricDef, load


def test_the_harness_declares_the_roles_of_its_own_figures():
    assert gpu_memory.METRICS[PEAK_MEMORY].role == PEAK_MEMORY_ROLE
    assert {energy.METRICS[n].role for n in ("energy_j", "avg_power_w")} == {ENERGY_ROLE}
    sdxl = load(WORKLOADS.get("sdxl"))
    declared = runner.declared_metrics(sdxl)
    assert declared["usd_per_1k_images"].role == COST_ROLE and declared["1k_images_per_usd"].role == VALUE_ROLE
    assert declared["j_per_image"].role == ENERGY_PER_UNIT_ROLE
    assert declared["images_per_s"].role is None  # the workload's own rate: no role
    made = pricing.cost_metrics(sdxl.spec.cost, {"images_per_s": Metric(value=2.0, unit="images/s")}, 3.6)
    assert {name: m.role for name, m in made.items()} == {"usd_per_1k_images": COST_ROLE,
                                                          "1k_images_per_usd": VALUE_ROLE}


def test_a_definitions_role_travels_with_its_value():
    assert MetricDef("GiB", "lower", role=PEAK_MEMORY_ROLE).metric(3.0) == Metric(
        value=3.0, unit="GiB", better="lower", role=PEAK_MEMORY_ROLE)
    line = json.loads(to_line(result({"a": MetricDef("GiB", "lower", role=PEAK_MEMORY_ROLE).metric(3.0),
                                      "b": MetricDef("x").metric(1.0)})))
    assert line["metrics"] == {"a": {"value": 3.0, "unit": "GiB", "better": "lower", "role": "peak_memory"},
                               "b": {"value": 1.0, "unit": "x", "better": None}}  # no role: not written
    embed = load(WORKLOADS.get("embed"))
    assert embed.metrics["tuned_peak_mem_gib"].role == PEAK_MEMORY_ROLE
    assert embed.metrics["tuned_usd_per_1M_passages"].role == COST_ROLE


def result(metrics: dict[str, Metric]) -> SetupResult:
    return SetupResult(run_id="r", setup="a", repeat=1, status="ok", metrics=metrics)


def test_the_summary_picks_memory_cost_and_energy_columns_by_role_not_by_name():
    results = [result({
        "tokens_per_s": Metric(value=10.0, unit="tokens/s", better="higher"),
        "busbw_peak_gbps": Metric(value=5.0, unit="GB/s", better="higher"),  # "peak" in its name: not memory
        "high_water_gib": Metric(value=3.0, unit="GiB", better="lower", role=PEAK_MEMORY_ROLE),
        "dollars_each": Metric(value=0.1, unit="USD/run", better="lower", role=COST_ROLE),
        "joules_each": Metric(value=9.0, unit="J/run", better="lower", role=ENERGY_PER_UNIT_ROLE),
        "a": Metric(value=1.0, unit="u"), "b": Metric(value=1.0, unit="u"), "c": Metric(value=1.0, unit="u"),
    })]
    summaries = summarize_results(["a"], results)
    assert summaries[0].metrics["high_water_gib"].role == PEAK_MEMORY_ROLE
    # no definition at hand (the launcher's view): the first four reported, then the roles beside the headline
    assert summary.headline_metrics(None, summary.roles(s.metrics for s in summaries)) == [
        "tokens_per_s", "busbw_peak_gbps", "high_water_gib", "dollars_each", "joules_each"]


def line(kind: str, version: str, **fields) -> str:
    return json.dumps({"schema_version": version, "run_id": "r", "ts": "2026-11-30T00:00:00.000000Z", "kind": kind,
                       **fields})


def stored_result(version: str, metrics: dict[str, dict]) -> SetupResult:
    return parse_record(line("result", version, setup="a", repeat=1, status="ok", metrics=metrics))


def test_a_record_before_1_4_reads_its_roles_from_the_harness_names():
    names = ["peak_mem_gib", "tuned_peak_mem_gib", "peak_vram_gb", "usd_per_1M_tokens", "slo_usd_per_1M_output_tokens",
             "1M_tokens_per_usd", "j_per_image", "energy_j", "avg_power_w", "busbw_peak_gbps", "pct_of_peak",
             "peak_mem_over_lora_gib", "tokens_per_s"]
    old = stored_result("1.3", {n: {"value": 1.0, "unit": "u", "better": None} for n in names})
    assert {n: m.role for n, m in old.metrics.items()} == {
        "peak_mem_gib": PEAK_MEMORY_ROLE, "tuned_peak_mem_gib": PEAK_MEMORY_ROLE, "usd_per_1M_tokens": COST_ROLE,
        "slo_usd_per_1M_output_tokens": COST_ROLE, "1M_tokens_per_usd": VALUE_ROLE,
        "j_per_image": ENERGY_PER_UNIT_ROLE, "energy_j": ENERGY_ROLE, "avg_power_w": ENERGY_ROLE,
        "busbw_peak_gbps": None, "pct_of_peak": None, "peak_mem_over_lora_gib": None, "tokens_per_s": None}
    assert legacy_role("peak_rss_gb") == PEAK_MEMORY_ROLE  # a name before 1.2, before its rename


def test_a_record_of_1_4_keeps_the_role_it_was_written_with():
    new = stored_result("1.4", {"usd_per_1M_tokens": {"value": 1.0, "unit": "u", "better": None},
                                "vram_top_gib": {"value": 2.0, "unit": "GiB", "better": "lower",
                                                 "role": PEAK_MEMORY_ROLE}})
    assert new.metrics["usd_per_1M_tokens"].role is None  # written without one: its name does not make it a cost
    assert new.metrics["vram_top_gib"].role == PEAK_MEMORY_ROLE  # a metric today's code does not declare


def test_a_finished_runs_summary_before_1_4_reads_its_roles_too():
    stat = {"unit": "GiB", "n": 1, "median": 1.0, "min": 1.0, "max": 1.0, "mean": 1.0, "stdev": 0.0, "cv": 0.0}
    finished = parse_record(line("run_finished", "1.3", status="ok", duration_s=1.0, summary=[
        {"setup": "a", "status": "ok", "ok_repeats": 1, "repeats": 1,
         "metrics": {"peak_mem_gib": stat, "step_ms": stat}}]))
    assert isinstance(finished, RunFinished)
    assert {n: m.role for n, m in finished.summary[0].metrics.items()} == {"peak_mem_gib": PEAK_MEMORY_ROLE,
                                                                           "step_ms": None}


def test_reports_and_the_site_read_the_roles_the_records_carry(tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
    from synthetic_runs import write_run

    values = {"compile-b4": [{"images_per_s": 7.0, "s_per_image": 0.14, "peak_mem_gib": 9.0, "j_per_image": 400.0}]}
    write_run(tmp_path / "run", "sdxl", "NVIDIA H200", 3.5, datetime(2026, 11, 1, tzinfo=UTC), values, progress=1)
    (table,) = report.build(stored_runs.discover([str(tmp_path)]))
    assert table.roles["peak_mem_gib"] == PEAK_MEMORY_ROLE and table.roles["j_per_image"] == ENERGY_PER_UNIT_ROLE
    assert table.roles["usd_per_1k_images"] == COST_ROLE  # costed by the report at the run's price
    assert {"peak_mem_gib", "j_per_image", "usd_per_1k_images"} <= set(table.columns)
    drawn = site.history_metrics(table)
    assert drawn and not {"peak_mem_gib", "j_per_image", "usd_per_1k_images"} & set(drawn)
