"""`gpubench loadgen --slo TARGET --search rate|users`: the highest load under the target, as one result a repeat.

A search is what `gpubench loadgen` measures in the Runner's lifecycle (gpubench/cli/loadgen.py) when --search is
given. The result's figures are the highest passing probe's own load (its latencies, goodput, and the $ per 1M output
tokens the Runner adds at the run's price), with the search's answer (slo_max_rate or slo_max_users), its precision
and probe count beside them, and the table of every probe in info["search"]. The load generator runs beside a server
it does not sample, so there is no energy figure here: `gpubench run vllm-serving --setups rate-search` measures the
joules at the found load.
"""

from __future__ import annotations

import time

from gpubench.loadgen import search
from gpubench.loadgen.spec import LoadSpec

DEFAULT_REQUESTS = 1000  # a probe's p99 rests on its requests: at 1,000 the 10 slowest, not the slowest one


def config(spec: LoadSpec, target, found: search.SearchSpec | None, cap: int | None) -> dict:
    """The run's config as stored: the load, the latency target as the serving configs name it (slo.of_config reads
    it back), and the search's settings; the users and rate a search sets are its own."""
    from dataclasses import asdict

    out = asdict(spec)
    if target is not None:
        out.update(slo_ttft_p99_ms=target.ttft_ms, slo_tpot_p99_ms=target.tpot_ms)
    if found is not None:
        out.update(users=cap if found.variable == "rate" else None, rate=None, search=found.variable,
                   search_tolerance=found.tolerance, search_max_probes=found.max_probes)
    return out


def measure(spec: LoadSpec, searched: search.SearchSpec, cap: int | None, setup: str, repeat: int, run_id: str,
            progress, say):
    """One repeat's result for the search (the Runner's in-process measure; the Runner costs it at the run's price):
    ok with the found load's figures and the probe table, or error with the reason and the probes measured before
    it. Each probe is said as it runs (`say`) and its timed part reported as phase "probe" (`progress`)."""
    from gpubench.loadgen.metrics import LOAD_METRICS
    from gpubench.loadgen.slo import SEARCH_METRICS, SLO_METRICS, SWEEP_METRICS
    from gpubench.schema import NOT_FINITE, SetupResult, split_finite

    definitions = {**LOAD_METRICS, **SLO_METRICS, **SWEEP_METRICS, **SEARCH_METRICS}
    started = time.perf_counter()
    say(f"  searching {search.WHAT[searched.variable]} at {searched.target.describe()}, to within"
        f" {searched.tolerance:.0%}, {spec.requests:,} requests a probe")
    status, error, values, info = "ok", None, {}, {}
    try:
        found = search.run(spec, searched, cap, progress=progress, say=say)
    except search.SearchFailed as exc:
        status, error = "error", str(exc)
        failed = search.Found(searched, exc.probes, None, None, f"failed: {exc}")
        info = {"search": failed.info(spec.requests)}
    else:
        if found.best is not None and found.best.run is not None:
            values = dict(found.best.metrics)
            info = found.best.run.info()
        values.update(found.metrics())
        info["search"] = found.info(spec.requests)
        say(f"  {found.stopped}")
    finite, not_finite = split_finite(values)
    metrics = {name: d.metric(finite[name]) for name, d in definitions.items() if name in finite}
    if not_finite:
        info[NOT_FINITE] = not_finite
    return SetupResult(run_id=run_id, setup=setup, repeat=repeat, status=status, metrics=metrics, error=error,
                       info=info, duration_s=round(time.perf_counter() - started, 3))
