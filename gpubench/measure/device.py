"""Where a torch workload runs, resolved once the same way everywhere, and the wait for it to finish.

A workload's `device` field is "auto" (a GPU when torch sees one, else the CPU), "cuda", "cuda:N" or "cpu".
"""

from __future__ import annotations


def resolve(requested: str, indexed: bool = False) -> str:
    """The device `requested` names: "auto" is "cuda" when torch sees a GPU ("cuda:N", the current one, when
    `indexed`), else "cpu"; anything else as given."""
    if requested != "auto":
        return requested
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
