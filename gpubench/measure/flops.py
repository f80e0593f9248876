"""How close to the machine: FLOPs counted by torch itself, and a rate of them against the GPU's datasheet peak.

A workload whose work per unit of output is countable (a training step per token, a UNet pass per
image, an encoder batch per passage) runs that unit once, eagerly, under `count()` and reports
`achieved_tflops` = FLOPs per unit x units per second; the dtype its matmuls ran in is the result's `dtype`
(its config's, or `ctx.dtype`). The runner then adds `pct_of_peak` from data/gpu_peaks.csv. torch's counter
sees matmuls, convolutions and attention (the work tensor cores do); element-wise ops are not counted,
and a recomputed activation (gradient checkpointing) is counted again: these are executed FLOPs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

from gpubench import reference
from gpubench.schema import Metric

METRIC = "achieved_tflops"
PEAK_METRIC = "pct_of_peak"
BANDWIDTH_METRIC = "achieved_gbps"  # memory-bound work: bytes it must read from device memory per second
BANDWIDTH_PEAK_METRIC = "pct_of_peak_bandwidth"
PEAK_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8": "fp8", "tf32": "tf32",
               "bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp8": "fp8"}


def count(fn: Callable[[], object]) -> int:
    """FLOPs that fn() executes, forward and backward, as torch's FlopCounterMode counts them."""
    from torch.utils import flop_counter

    with flop_counter.FlopCounterMode(display=False, custom_mapping=_formulas_torch_lacks()) as counter:
        fn()
    return counter.get_total_flops()


def _formulas_torch_lacks() -> dict:
    """CPU's fused attention (the GPU kernels' formulas fit it) and bitsandbytes' 4-bit matmuls, which carry
    QLoRA's frozen base wherever no gradient flows into their input."""
    import torch
    from torch.utils import flop_counter

    aten = torch.ops.aten
    formulas = {
        aten._scaled_dot_product_flash_attention_for_cpu: flop_counter.sdpa_flop.__wrapped__,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: flop_counter.sdpa_backward_flop.__wrapped__,
    }
    for name in ("gemm_4bit", "gemv_4bit"):
        with contextlib.suppress(AttributeError, RuntimeError):  # bitsandbytes not imported: nothing of it to count
            formulas[getattr(torch.ops.bitsandbytes, name)] = _matmul_4bit
    return formulas


def _matmul_4bit(a_shape, b_shape, shape_b, *args, out_shape=None, **kwargs) -> int:
    """A [..., K] times the dequantized [N, K] weight: 2 x rows x N x K."""
    return 2 * math.prod(a_shape[:-1]) * shape_b[0] * shape_b[1]


def pct_of_peak(tflops: float, device_name: str | None, dtype: str | None) -> float | None:
    """Achieved TFLOP/s as a percentage of the device's dense datasheet peak for dtype; None when unknown."""
    peak = reference.peak_for(device_name) if device_name else None
    top = peak.tflops.get(PEAK_DTYPES.get(dtype or "", "")) if peak else None
    return 100 * tflops / top if top else None


def peak_share(metrics: dict[str, Metric], device_name: str | None, dtype: str | None) -> Metric | None:
    """The pct_of_peak metric for a result's achieved_tflops; None when it has none or the peak is unknown."""
    achieved = metrics.get(METRIC)
    pct = pct_of_peak(achieved.value, device_name, dtype) if achieved else None
    return Metric(value=pct, unit="%", better="higher") if pct is not None else None


def bandwidth_share(metrics: dict[str, Metric], device_name: str | None) -> Metric | None:
    """achieved_gbps as a percentage of the device's datasheet memory bandwidth; None when either is unknown."""
    achieved = metrics.get(BANDWIDTH_METRIC)
    peak = reference.peak_for(device_name) if achieved and device_name else None
    if peak is None or not peak.bandwidth_gbps:
        return None
    return Metric(value=100 * achieved.value / peak.bandwidth_gbps, unit="%", better="higher")
