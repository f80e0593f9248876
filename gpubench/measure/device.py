"""Where a workload runs, resolved once the same way everywhere, and the wait for it to finish.

A workload's `device` field is "auto" (a GPU when its engine, torch unless it says otherwise, sees one, else the
CPU), "cuda", "cuda:N" or "cpu".
"""

from __future__ import annotations


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


def synchronize(device: str) -> None:
    """Wait for the work queued on `device`: a GPU runs its kernels after the Python that queued them returns,
    so a clock read before this would time the queueing, not the work. Nothing to wait for on a CPU."""
    if on_gpu(device):
        import torch

        torch.cuda.synchronize()
