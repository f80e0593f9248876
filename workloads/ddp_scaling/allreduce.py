"""All-reduce bandwidth the way nccl-tests reports it, over an initialised torch.distributed group.

For each message size (float32, doubling from the smallest to the largest), a few warm-up
all-reduces, then `iters` back to back, timed from a barrier to a device synchronize:
algorithm bandwidth = bytes / time; bus bandwidth = algbw x 2(n-1)/n, nccl-tests' correction that
makes the number comparable with the links' speed whatever the number of ranks.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from gpubench.measure import device as measure_device
from gpubench.measure import timing

MB = 1 << 20  # nccl-tests' "8M" is 8 MiB; bandwidths are in GB/s (1e9 bytes)


def message_sizes(min_mb: float, max_mb: float) -> list[int]:
    """Sizes in bytes from min_mb to max_mb (both included when on the doubling ladder), 4-byte aligned."""
    if min_mb <= 0 or max_mb < min_mb:
        raise ValueError(f"all-reduce sizes: need 0 < min ({min_mb} MB) <= max ({max_mb} MB)")
    sizes, size = [], min_mb * MB
    while size <= max_mb * MB * (1 + 1e-9):
        sizes.append(int(size) // 4 * 4)
        size *= 2
    return sizes


def bus_factor(world_size: int) -> float:
    return 2 * (world_size - 1) / world_size


def measure(device, world_size: int, sizes: list[int], warmup: int, iters: int,
            progress: Callable[[int, int], None] | None = None) -> list[dict[str, float]]:
    import torch
    import torch.distributed as dist

    on_cuda = device.type == "cuda"
    barrier_args = {"device_ids": [device.index]} if on_cuda else {}
    rows = []
    for index, nbytes in enumerate(sizes):
        buffer = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(buffer)
        measure_device.synchronize(str(device))
        dist.barrier(**barrier_args)
        with timing.Timed(None, str(device)) as timed:  # inside the caller's "allreduce" phase
            for _ in range(iters):
                dist.all_reduce(buffer)
        seconds = timed.seconds / iters
        algbw = nbytes / seconds / 1e9
        rows.append({"bytes": nbytes, "time_us": seconds * 1e6, "algbw_gbps": algbw,
                     "busbw_gbps": algbw * bus_factor(world_size)})
        del buffer
        if progress:
            progress(index + 1, len(sizes))
    return rows


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    busbw = [r["busbw_gbps"] for r in rows]
    return {
        "busbw_peak_gbps": max(busbw),
        "busbw_median_gbps": statistics.median(busbw),
        "algbw_median_gbps": statistics.median(r["algbw_gbps"] for r in rows),
    }
