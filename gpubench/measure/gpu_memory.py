"""Peak memory, one figure for every workload: `peak_mem_gib`, the peak memory of the device the setup ran on.

On a GPU: what the engine allocated at most (torch.cuda.max_memory_allocated), or, where the engine is not torch
(CTranslate2) or the study measured it so, the GPU's used memory sampled every 0.5 s (as nvidia-smi shows it):
NVML's device-wide "used" figure includes what the frameworks reserve and the CUDA context, not only live
tensors. On a CPU run the peak resident set size of this process stands in. info["peak_mem"] says which.
Results stored before schema 1.2 named it six ways in two units; gpubench/schema.py reads those as this.
"""

from __future__ import annotations

import resource
import threading

from gpubench.schema import PEAK_MEMORY
from gpubench.workload import MetricDef

GIB = 2**30
TORCH_ALLOCATED = "GPU: torch.cuda.max_memory_allocated"
NVML_USED = "GPU: NVML device-wide used memory, sampled"
HOST_RSS = "host: peak resident set of the worker process (no GPU)"
METRICS = {PEAK_MEMORY: MetricDef("GiB", "lower", "peak memory of the device the setup ran on (info peak_mem: "
                                                  "torch's allocation or NVML's on a GPU, the host's RSS on a CPU)")}


class GpuMemorySampler:
    """A thread reading NVML's used memory of the GPU this process runs on (the first visible one, as the
    frameworks choose it), keeping the maximum; NVML is read through gpubench/measure/nvml.py."""

    def __init__(self, interval_s: float = 0.5):
        from gpubench.measure.nvml import Nvml

        self._nvml = Nvml()
        if not self._nvml.handles:
            self._nvml.close()
            raise RuntimeError("NVML sees no GPU (CUDA_VISIBLE_DEVICES)")
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)

    def _sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._nvml.memory_used_bytes(0))
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> GpuMemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()  # the last moment counts too
        self._nvml.close()


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak(info: dict, gpu_bytes: float | None, how: str = TORCH_ALLOCATED) -> dict[str, float]:
    """The setup's peak-memory metric, and in info what it measured: the GPU's peak when there is one (measured
    `how`), else the host's peak RSS."""
    if gpu_bytes is None:
        info["peak_mem"] = HOST_RSS
        return {PEAK_MEMORY: peak_rss_bytes() / GIB}
    info["peak_mem"] = how
    return {PEAK_MEMORY: gpu_bytes / GIB}
