"""Where a workload runs, resolved once the same way everywhere, and the wait for it to finish.

A workload's `device` field is "auto" (a GPU when its engine, torch unless it says otherwise, sees one, else the
CPU), "cuda", "cuda:N" or "cpu". The wait is torch's for torch's work, and the CUDA driver's for an engine of
its own (CTranslate2): a torch wait would bring torch's CUDA state into a process that does not use torch on
the GPU, and its memory into that process's peak.
"""

from __future__ import annotations

import ctypes

TORCH = "torch"
ENGINES = (TORCH, "ctranslate2")


def resolve(requested: str, indexed: bool = False, gpu_count=None) -> str:
    """The device `requested` names: "auto" is "cuda" when torch sees a GPU ("cuda:N", the current one, when
    `indexed`), else "cpu"; anything else as given. An engine other than torch passes `gpu_count`, its own count
    of the GPUs it can use (CTranslate2's may see a GPU that a CPU build of torch does not)."""
    if requested != "auto":
        return requested
    if gpu_count is not None:
        return "cuda" if gpu_count() > 0 else "cpu"
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{torch.cuda.current_device()}" if indexed else "cuda"


def on_gpu(device: str) -> bool:
    return device.startswith("cuda")


def index(device: str) -> int:
    """The GPU's index in "cuda:N" (0 for "cuda")."""
    return int(device.partition(":")[2] or 0)


def synchronize(device: str, engine: str = TORCH) -> None:
    """Wait for the work queued on `device` by `engine`: a GPU runs its kernels after the Python that queued them
    returns, so a clock read before this would time the queueing, not the work. Nothing to wait for on a CPU."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
    if not on_gpu(device):
        return
    if engine == TORCH:
        import torch

        torch.cuda.synchronize()
    else:
        synchronize_context(index(device))


class DriverError(RuntimeError):
    pass


def _libcuda():
    return ctypes.CDLL("libcuda.so.1")


def synchronize_context(gpu: int, libcuda=None) -> None:
    """Wait, through the CUDA driver, for every stream of GPU `gpu`'s primary context: the context every CUDA
    runtime in the process shares (CTranslate2's static one and torch's alike), whatever streams it queued on."""
    cuda = libcuda or _libcuda()

    def check(call: str, *args) -> None:
        code = getattr(cuda, call)(*args)
        if code != 0:
            raise DriverError(f"{call} failed with CUDA driver error {code}")

    context, handle = ctypes.c_void_p(), ctypes.c_int()
    check("cuInit", 0)
    check("cuDeviceGet", ctypes.byref(handle), gpu)
    check("cuDevicePrimaryCtxRetain", ctypes.byref(context), handle)
    try:
        check("cuCtxPushCurrent_v2", context)
        try:
            check("cuCtxSynchronize")
        finally:
            check("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
    finally:
        check("cuDevicePrimaryCtxRelease_v2", handle)
