"""The instance-type catalogue, GPU names as the API accepts them, and per-GPU capacity."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def _row(
    type_id: str,
    gpu: str,
    count: int,
    region: str,
    deployment: str,
    hourly: float,
    *,
    cpus: int,
    memory_gb: float,
    storage_gb: float,
    gpu_memory_gb: int,
) -> dict[str, Any]:
    return {
        "id": type_id,
        "gpu_type": gpu,
        "gpu_count": count,
        "cpu_cores": cpus,
        "memory_gb": memory_gb,
        "storage_gb": storage_gb,
        "region": region,
        "deployment_type": deployment,
        "hourly_rate": hourly,
        "gpu_memory_gb": gpu_memory_gb,
    }


def default_instance_types() -> list[dict[str, Any]]:
    """Rows of GPU + count + region, priced like a small neocloud (container: seconds to start, vm: minutes)."""
    return [
        _row("brisk-rosalind-a4000-1a2b", "A4000", 1, "us-east-1", "container", 0.17,
             cpus=8, memory_gb=32, storage_gb=100, gpu_memory_gb=16),
        _row("keen-hopper-rtx5090-3c4d", "RTX5090", 1, "us-east-1", "container", 0.69,
             cpus=16, memory_gb=64, storage_gb=200, gpu_memory_gb=32),
        _row("calm-lovelace-l40s-5e6f", "L40S", 1, "us-east-1", "container", 0.86,
             cpus=16, memory_gb=64, storage_gb=200, gpu_memory_gb=48),
        _row("calm-lovelace-l40s-eu-7a8b", "L40S", 1, "eu-west-1", "container", 0.89,
             cpus=16, memory_gb=64, storage_gb=200, gpu_memory_gb=48),
        _row("bold-tesla-a100-fa6f", "A100", 1, "us-east-1", "vm", 1.19,
             cpus=12, memory_gb=85, storage_gb=256, gpu_memory_gb=40),
        _row("swift-curie-a100-80gb-9c0d", "A100-80GB", 1, "us-east-1", "vm", 1.64,
             cpus=16, memory_gb=117, storage_gb=512, gpu_memory_gb=80),
        _row("swift-curie-a100-80gb-x2-1e2f", "A100-80GB", 2, "us-east-1", "vm", 3.28,
             cpus=32, memory_gb=234, storage_gb=1024, gpu_memory_gb=80),
        _row("grand-noether-h100-3a4b", "H100", 1, "us-east-1", "vm", 2.49,
             cpus=26, memory_gb=200, storage_gb=512, gpu_memory_gb=80),
        _row("grand-noether-h100-x8-5c6d", "H100", 8, "us-west-2", "vm", 19.92,
             cpus=208, memory_gb=1800, storage_gb=8192, gpu_memory_gb=80),
    ]


# Other spellings the API answers to (matching ignores case).
GPU_ALIASES = {
    "h100-sxm": "H100",
    "h100-sxm5": "H100",
    "a100-sxm4-80gb": "A100-80GB",
    "a100-80g": "A100-80GB",
    "rtx-5090": "RTX5090",
    "l40s-48gb": "L40S",
}


def canonical_gpu(name: str, types: list[dict[str, Any]]) -> str | None:
    """The catalogue's spelling of a GPU name, or None for a GPU the API does not know."""
    wanted = name.strip().lower()
    for row in types:
        if row["gpu_type"].lower() == wanted:
            return row["gpu_type"]
    alias = GPU_ALIASES.get(wanted)
    if alias and any(row["gpu_type"] == alias for row in types):
        return alias
    return None


def known_gpus(types: list[dict[str, Any]]) -> list[str]:
    return sorted({row["gpu_type"] for row in types})


def region_matches(wanted: str | None, region: str) -> bool:
    """A region id or the start of one (``us-east``)."""
    return wanted is None or region.lower().startswith(wanted.strip().lower())


def matching_rows(
    types: list[dict[str, Any]], gpu: str, count: int | None = None, region: str | None = None
) -> list[dict[str, Any]]:
    return [
        row
        for row in types
        if row["gpu_type"] == gpu
        and (count is None or row["gpu_count"] == count)
        and region_matches(region, row["region"])
    ]


def placement(
    types: list[dict[str, Any]], gpu: str, count: int, region: str | None
) -> tuple[str, float, int] | None:
    """(region, hourly rate, GPU memory GB) for GPU x count, cheapest first; None if not offered there.

    A count with no row of its own is priced as that many single-GPU machines.
    """
    exact = sorted(matching_rows(types, gpu, count, region), key=lambda row: row["hourly_rate"])
    if exact:
        row = exact[0]
        return row["region"], row["hourly_rate"], row["gpu_memory_gb"]
    singles = sorted(matching_rows(types, gpu, 1, region), key=lambda row: row["hourly_rate"])
    if singles:
        row = singles[0]
        return row["region"], round(row["hourly_rate"] * count, 6), row["gpu_memory_gb"]
    return None


class Capacity:
    """Which GPUs can be had right now; every GPU has capacity until told otherwise."""

    def __init__(self) -> None:
        self._unavailable: set[str] = set()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def set(self, gpu: str, available: bool) -> None:
        with self._lock:
            if available:
                self._unavailable.discard(gpu)
            else:
                self._unavailable.add(gpu)
        for listener in self._listeners:
            listener()

    def available(self, gpu: str) -> bool:
        with self._lock:
            return gpu not in self._unavailable
