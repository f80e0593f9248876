"""Peak memory the study's way: the GPU's used memory sampled every 0.5 s (as nvidia-smi shows it).

NVML's device-wide "used" figure includes what the frameworks reserve and the CUDA context, not only
live tensors, and it sees CTranslate2's allocations as well as torch's. On a machine without a GPU the
peak resident set size of this process stands in.
"""

from __future__ import annotations

import os
import resource
import threading


class GpuMemorySampler:
    """A thread reading NVML's used memory of the GPU this process runs on, keeping the maximum."""

    def __init__(self, interval_s: float = 0.5):
        import pynvml

        self._nvml = pynvml
        pynvml.nvmlInit()
        self._handle = _visible_device(pynvml)
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)

    def _sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used)
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
        self._nvml.nvmlShutdown()


def _visible_device(pynvml):
    """The first GPU in CUDA_VISIBLE_DEVICES (an index or a UUID), else GPU 0: the one the frameworks use."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    if first.isdigit():
        return pynvml.nvmlDeviceGetHandleByIndex(int(first))
    return pynvml.nvmlDeviceGetHandleByUUID(first)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
