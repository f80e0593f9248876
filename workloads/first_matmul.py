"""Launch to first matmul, the in-container part: import torch, create the CUDA context, one matmul.

The study timed `x = torch.randn(4096, 4096, device='cuda'); y = x @ x; torch.cuda.synchronize()` in
a fresh Python, "mostly CUDA context creation". The launcher (`gpubench-launch first-matmul`) times
create -> API running -> first SSH around this step; here we report what happens inside the process.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from gpubench.config_fields import DEVICE, param
from gpubench.measure import device as measure_device
from gpubench.measure import timing
from gpubench.workload import MetricDef, SetupContext


@dataclass
class Config:
    size: int = param(4096, "the square fp32 matrices' side", min=1)
    device: str = param("auto", "where it runs", **DEVICE)
    warm_repeats: int = param(10, "warm matmuls timed after the first", min=1)


SMOKE = {"size": 256, "warm_repeats": 3}

HEADLINE = [  # the post's table columns, in its order
    "first_matmul_s", "import_torch_s", "warm_matmul_ms", "warm_tflops",
]

TIMED_PHASES = ("first_matmul",)  # what utilisation is summarised over

METRICS = {
    "import_torch_s": MetricDef("s", "lower", "import torch in a fresh process"),
    "first_matmul_s": MetricDef("s", "lower", "CUDA context + the first size x size fp32 matmul, synchronised"),
    "warm_matmul_ms": MetricDef("ms", "lower", "the same matmul once warm, mean of warm_repeats"),
    "warm_tflops": MetricDef("TFLOP/s", "higher", "2 size^3 / warm_matmul_ms"),
}

SETUP_NOTES = {"matmul": "import torch, create the CUDA context, one 4096x4096 matmul (the launcher times the rest)"}


def run_setup(setup: str, config: Config, ctx: SetupContext) -> dict[str, float]:
    already_imported = "torch" in sys.modules
    with timing.Timed(None, None) as importing:
        import torch
    device = measure_device.resolve(config.device)

    # cold: the device's first use is what is timed; a wait before the clock would create the CUDA context
    with timing.Timed(ctx, device, phase="first_matmul", cold=True) as first:
        x = torch.randn(config.size, config.size, device=device)
        y = x @ x

    with timing.Timed(None, device) as warm:  # inside the first_matmul phase
        for _ in range(config.warm_repeats):
            y = x @ x
    warm_s = warm.seconds / config.warm_repeats
    del y
    metrics = {"first_matmul_s": first.seconds, "warm_matmul_ms": warm_s * 1000,
               "warm_tflops": 2 * config.size**3 / warm_s / 1e12}
    if not already_imported:
        metrics["import_torch_s"] = importing.seconds
    return metrics
