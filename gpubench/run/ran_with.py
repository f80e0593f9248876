"""The device and the dtype a setup ran with, as the worker records them on its result (schema 1.3).

The device is the config's `device` resolved as the workloads resolve it (gpubench/measure/device.py), with its
index ("auto" and "cuda" are "cuda:N", the current GPU) and the GPU's name from torch. A workload without a device
field (a server's client) gets the GPU torch would use, when torch is loaded, as before 1.3. The worker resolves
after the setup has run: importing torch before it would change what a setup that times its own import measures.

The dtype is the one the workload said it computed in (`ctx.dtype`: a CPU's float32, a fixed bf16 autocast), else
the config's `dtype`; "auto" (left to an engine) is none.
"""

from __future__ import annotations

import sys

from gpubench.measure import device as measure_device


def device(config: object | None) -> tuple[str | None, str | None]:
    """(device, GPU name): ("cuda:0", "NVIDIA H200"), ("cpu", None); (None, None) when it cannot be said (no
    config: the module or config failed; "auto" without torch)."""
    requested = getattr(config, "device", None) if config is not None else None
    if not isinstance(requested, str):
        if config is None or "torch" not in sys.modules:
            return None, None
        requested = "auto"
    try:
        resolved = measure_device.resolve(requested, indexed=True)
        if resolved == "cuda":
            import torch

            resolved = f"cuda:{torch.cuda.current_device()}"
    except ImportError:  # an engine without torch (CTranslate2) told "auto" or "cuda"
        return None, None
    except Exception:  # noqa: BLE001 - "cuda" where torch sees no GPU: the setup failed on it, its record still says so
        return requested, None
    return resolved, gpu_name(resolved)


def gpu_name(resolved: str) -> str | None:
    if not measure_device.on_gpu(resolved):
        return None
    import torch

    try:
        return torch.cuda.get_device_name(resolved)
    except Exception:  # noqa: BLE001 - no such GPU here (a bad device the setup failed on): no name to give
        return None


def dtype(config: object | None, said: str | None) -> str | None:
    chosen = said or getattr(config, "dtype", None)
    return str(chosen) if chosen and chosen != "auto" else None
