"""`gpubench loadgen`'s runs as the readers see a study: its catalog-shaped spec and its definition.

The load generator is a tool, not one of the posts' studies, so it has no catalog entry (nothing lists, builds or
launches it). Its runs are stored like a study's, as workload "loadgen", and `gpubench report` and `gpubench site`
read them through `spec` and `definition` here; a run's setup is its load (u16, r100, r100-u8), so the setups are
whatever the runs held.
"""

from __future__ import annotations

from gpubench.catalog import CostBasis, WorkloadSpec
from gpubench.loadgen.metrics import LOAD_METRICS
from gpubench.loadgen.slo import SEARCH_METRICS, SLO_METRICS, SWEEP_METRICS
from gpubench.loadgen.spec import LoadSpec
from gpubench.workload import WorkloadDefinition

NAME = "loadgen"
TITLE = "Load generator against an OpenAI-compatible server"
COST = CostBasis("output_tokens_per_s", "1M output tokens", 1e6)  # the serving workloads' cost basis
HEADLINE = ("output_tokens_per_s", "per_user_tokens_per_s", "ttft_ms_p50", "tpot_ms_p50", "e2e_ms_p50",
            "client_cpu_pct", "client_bound", "usage_mismatches")


def spec(setups: tuple[str, ...], study: str = "loadgen against OpenAI-compatible servers") -> WorkloadSpec:
    return WorkloadSpec(name=NAME, title=TITLE, study=study, setups=tuple(setups), gpus="the server's", gpu_count=0,
                        min_gpu_memory_gb=0, expected_minutes=0, dependencies={}, cost=COST)


def _not_a_workload(*_args, **_kwargs):
    raise TypeError("the load generator runs through `gpubench loadgen`, not as a workload")


def definition(of: WorkloadSpec) -> WorkloadDefinition:
    """What the readers take from a workload module: its metrics and headline columns."""
    return WorkloadDefinition(spec=of, config=LoadSpec, smoke={},
                              metrics={**LOAD_METRICS, **SLO_METRICS, **SWEEP_METRICS, **SEARCH_METRICS},
                              run_setup=_not_a_workload, setups=dict.fromkeys(of.setups), headline=HEADLINE)
