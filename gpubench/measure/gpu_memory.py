"""Peak memory, one tracker for every workload: `peak_mem_gib`, the peak memory of the device the setup ran on.

The worker opens one `MemoryTracker` per setup and hands it to the workload as `ctx.memory`; no workload reads
torch's allocator or NVML itself (tests/test_memory_owned.py). `reset(device)` starts the part whose peak counts
(left out: since the worker process started), `peak(device)` ends it and gives the metric, `peak_bytes(device)` a
figure of another name over another part (embed's tuned pipeline, the serving studies' GSM8K pass).

On a GPU: what torch allocated at most (torch.cuda.max_memory_allocated), or, where the engine is not torch
(CTranslate2) or the study measured it so (`how=NVML_USED`), the GPU's used memory as the harness's one NVML sampler
read it (every 50 ms, and once on the spot at each end of the part): NVML's device-wide "used" figure includes what
the frameworks reserve and the CUDA context, not only live tensors. On a CPU run the peak resident set size of this
process stands in (it cannot be reset: it is the process's). info["peak_mem"] says which.
Results stored before schema 1.2 named it six ways in two units; gpubench/schema.py reads those as this.
"""

from __future__ import annotations

import resource
import sys
from typing import Protocol

from gpubench.schema import PEAK_MEMORY, PEAK_MEMORY_ROLE
from gpubench.workload import MetricDef

GIB = 2**30
TORCH_ALLOCATED = "GPU: torch.cuda.max_memory_allocated"
NVML_USED = "GPU: NVML device-wide used memory, sampled"
HOST_RSS = "host: peak resident set of the worker process (no GPU)"
METRICS = {PEAK_MEMORY: MetricDef("GiB", "lower", "peak memory of the device the setup ran on (info peak_mem: "
                                                  "torch's allocation or NVML's on a GPU, the host's RSS on a CPU)",
                                  role=PEAK_MEMORY_ROLE)}


class GpuReadings(Protocol):
    """The harness's NVML sampler as the tracker reads it (gpubench/run/utilisation.Sampler)."""

    def reading_now(self) -> int:
        """Take a reading on the spot; its position among the readings."""

    def memory_peak(self, since: int, gpu: int) -> int | None:
        """The most used bytes of visible GPU `gpu` over the readings from position `since` on; None: none had it."""


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def gpu_index(device: str) -> int | None:
    """The visible GPU a torch device string names ("cuda:1" -> 1, "cuda" -> 0); None for a CPU."""
    if not device.startswith("cuda"):
        return None
    _, _, index = device.partition(":")
    return int(index) if index.isdigit() else 0


class MemoryTracker:
    """One setup's peak memory (ctx.memory): torch's allocator on a GPU, NVML's used memory from the harness's
    sampler, or the host's RSS on a CPU. `readings` is the sampler (None: none runs, and `no_readings` says why)."""

    def __init__(self, info: dict, readings: GpuReadings | None = None, no_readings: str | None = None):
        self.info = info
        self.readings, self.no_readings = readings, no_readings
        self._since = 0  # the reading the NVML part starts at

    def reset(self, device: str) -> None:
        """The peak counts from here: torch's allocator's peak on `device` and the NVML part start now."""
        index = gpu_index(device)
        if index is None:
            return
        if self.readings is not None:
            self._since = self.readings.reading_now()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.reset_peak_memory_stats(device)

    def peak_bytes(self, device: str, how: str = TORCH_ALLOCATED) -> int | None:
        """The GPU's peak since reset (`how`: TORCH_ALLOCATED or NVML_USED); None on a CPU or without NVML readings."""
        index = gpu_index(device)
        if index is None:
            return None
        if how == NVML_USED:
            if self.readings is None:
                return None
            self.readings.reading_now()  # the part's last moment counts too
            return self.readings.memory_peak(self._since, index)
        import torch

        return int(torch.cuda.max_memory_allocated(device))

    def peak(self, device: str, how: str = TORCH_ALLOCATED) -> dict[str, float]:
        """The setup's peak-memory metric, and in info what it measured: the GPU's peak since reset when it ran on
        one, else the host's peak RSS. No metric, and the reason in info, where NVML had no readings."""
        if gpu_index(device) is None:
            self.info["peak_mem"] = HOST_RSS
            return {PEAK_MEMORY: peak_rss_bytes() / GIB}
        found = self.peak_bytes(device, how)
        if found is None:
            self.info["peak_mem"] = f"not measured: no NVML readings ({self.no_readings or 'no GPU sampler'})"
            return {}
        self.info["peak_mem"] = how
        return {PEAK_MEMORY: found / GIB}
