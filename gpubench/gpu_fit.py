"""Whether a GPU fits a workload, from data only: the catalog's needs (memory per GPU, GPUs of one host, tensor-core
dtypes, compute capability) against the GPU's row in data/gpu_peaks.csv. The launcher and sweeps ask before they
rent anything, so a 24 GB card is never paid for to fail a 48 GB study.

A GPU the table does not know is refused with the reason: the API's /instances/types gives host memory, not GPU
memory or features, so nothing could say it fits, and a row in the table is a one-line fix. A --smoke run is
CPU-sized and fits any GPU.
"""

from __future__ import annotations

from gpubench.catalog import WorkloadSpec
from gpubench.reference import gpu_for_provider_name

TABLE = "gpubench/data/gpu_peaks.csv"
FEATURES = {"fp8": "FP8 tensor cores"}


def why_unfit(spec: WorkloadSpec, gpu: str, count: int, setups: list[str] | tuple[str, ...] | None = None,
              smoke: bool = False) -> str | None:
    """One line saying why `count` x `gpu` (a provider's name) cannot run the workload's setups; None if it can."""
    if smoke:
        return None
    label = gpu if count == 1 else f"{gpu}:{count}"
    needed = spec.gpus_needed(setups)
    if count < needed:
        return f"{spec.name} needs {needed} GPUs of one host; {label} has {count}"
    facts = gpu_for_provider_name(gpu)
    if facts is None:
        return (f"{gpu} is not in {TABLE}, so its memory and features are unknown (/instances/types lists host "
                "memory only): add its row")
    if facts.memory_gb < spec.min_gpu_memory_gb:
        return (f"{spec.name} needs {spec.min_gpu_memory_gb:g} GB per GPU; {gpu} ({facts.gpu}) has"
                f" {facts.memory_gb:g} GB")
    for feature in spec.gpu_features:
        if feature not in facts.features:
            return f"{spec.name} needs {FEATURES.get(feature, feature)}; {gpu} ({facts.gpu}) has none"
    if facts.compute_capability < spec.min_compute_capability:
        have, want = (".".join(map(str, cc)) for cc in (facts.compute_capability, spec.min_compute_capability))
        return f"{spec.name} needs CUDA compute capability {want} or later; {gpu} ({facts.gpu}) is {have}"
    return None
