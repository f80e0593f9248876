"""Every ok GPU result stored in benchmarks/results, judged by today's rules, gets a named verdict or an undetermined
one with its reason: none falls through to "no rule met". Results written before gpubench sampled utilisation say
they were not sampled. The figures are the stored ones; the verdict is judged again as the runner judges it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gpubench.results import verdict
from gpubench.run.runner import judged
from gpubench.schema import SetupResult, parse_record

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def stored_gpu_results() -> list[tuple[str, SetupResult]]:
    """(where, result) for every ok result that ran on a GPU: its device is one, or it has GPU figures (a server's
    client, as Ollama's runs, has no device of its own)."""
    found = []
    for path in sorted(RESULTS.rglob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            record = parse_record(line)
            if isinstance(record, SetupResult) and record.status == "ok" and (
                    (record.device or "").startswith("cuda") or "gpu_busy_pct" in record.metrics):
                found.append((f"{path.relative_to(RESULTS)}:{number} {record.setup}", record))
    return found


def test_every_stored_ok_gpu_result_has_a_named_verdict_or_a_stated_reason():
    results = stored_gpu_results()
    assert len(results) >= 100, len(results)  # every copy of each H200 run: the walk found them
    labels = Counter()
    for where, result in results:
        found = judged(result)
        labels[found.label] += 1
        assert found.label in verdict.VERDICTS, where
        assert not found.basis.startswith("no rule met"), f"{where}: {found.basis}"
    # what the stored runs hold: sampled results are each named, the unsampled ones say so
    unsampled = [where for where, result in results if judged(result).basis.startswith("not sampled")]
    assert labels["undetermined"] == len(unsampled) + 2, labels  # and cold-start cache-warm (two copies)
    assert {"gpu-bound", "memory-bound", "host-bound", "throttled", "storage-bound", "compute-bound"} <= set(labels)
