"""Peak memory the study's way: the GPU's used memory sampled every 0.5 s (as nvidia-smi shows it).

NVML's device-wide "used" figure includes what the frameworks reserve and the CUDA context, not only
live tensors, and it sees CTranslate2's allocations as well as torch's. On a machine without a GPU the
peak resident set size of this process stands in.
"""

from __future__ import annotations

import resource
import threading


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
