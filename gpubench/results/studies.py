"""What a stored run is a run of, for the readers: a catalog study, or the load generator on its own.

`gpubench loadgen` stores its runs as workload "loadgen" (gpubench/loadgen/study.py), which the catalog does not
hold; `gpubench report` and `gpubench site` look every run's workload up here, so both read its runs and an unknown
name's error lists both kinds.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.loadgen import study as loadgen_study
from gpubench.registry import UnknownName
from gpubench.results.stored_runs import StoredRun
from gpubench.workload import WorkloadDefinition, load


def spec_of(name: str, runs: Iterable[StoredRun] = ()) -> WorkloadSpec:
    """The study `name` names; the load generator's setups are the loads its `runs` held, in their order."""
    if name == loadgen_study.NAME:
        return loadgen_study.spec(tuple(dict.fromkeys(s for run in runs for s in run.started.setups)))
    if name not in WORKLOADS:
        raise UnknownName("workload", name, [*WORKLOADS.names(), loadgen_study.NAME])
    return WORKLOADS.get(name)


def definition_of(spec: WorkloadSpec) -> WorkloadDefinition:
    return loadgen_study.definition(spec) if spec.name == loadgen_study.NAME else load(spec)
