"""A stand-in for nvidia-ml-py (the `pynvml` module) with GPUs of known power, for the tests to put in
sys.modules. It answers the calls gpubench/measure/nvml.py makes, the way the real bindings do: values in
NVML's units (mW, mJ, MHz, %), field values as structures with a return code, NVMLError for what a GPU does not
support. Each GPU's true energy is its power integrated over the given clock; what it reports of it is set per
GPU (a counter that answers only from some moment, a counter that wraps, no counter, no instantaneous field)."""

from __future__ import annotations

import threading
import time
import types
from dataclasses import dataclass

NVML_CLOCK_SM = 1
NVML_FI_DEV_POWER_INSTANT = 186
NOT_SUPPORTED = 3


class NVMLError(Exception):
    def __init__(self, code=NOT_SUPPORTED):
        super().__init__(f"NVML error {code}")
        self.value = code


@dataclass
class FakeGpu:
    watts: float  # the true draw, constant
    busy: int = 100
    counter_offset_mj: int = 0  # what the counter read when the clock was 0 (it counts from the driver's load)
    counter_from_s: float | None = 0.0  # the counter answers from this time on; None: never (pre-Volta)
    counter_wraps_at_mj: int | None = None  # the counter restarts from 0 past this value
    instant: bool = True  # the GPU answers NVML_FI_DEV_POWER_INSTANT
    instant_scale: float = 1.0  # what the instantaneous reading shows of the true draw
    average_scale: float = 1.0  # what nvmlDeviceGetPowerUsage shows of the true draw
    memory_used: int = 2 * 2**30


def module(gpus: list[FakeGpu], clock=time.monotonic) -> types.ModuleType:
    """A `pynvml` module whose devices are `gpus`, their energy counted over `clock()` seconds."""
    nv = types.ModuleType("pynvml")
    start = clock()
    nv.NVMLError = NVMLError
    nv.NVML_CLOCK_SM = NVML_CLOCK_SM
    nv.NVML_FI_DEV_POWER_INSTANT = NVML_FI_DEV_POWER_INSTANT
    nv.shutdowns = 0
    nv.inits = 0
    nv.reading_threads = set()  # the threads that read a GPU's figures (threading.get_ident())

    def now():
        return clock() - start

    def energy(gpu: FakeGpu) -> int:
        t = now()
        if gpu.counter_from_s is None or t < gpu.counter_from_s:
            raise NVMLError()
        total = gpu.counter_offset_mj + int(gpu.watts * t * 1000)
        return total % gpu.counter_wraps_at_mj if gpu.counter_wraps_at_mj else total

    def field_values(gpu: FakeGpu, ids):
        out = []
        for field_id in ids:
            ok = field_id == NVML_FI_DEV_POWER_INSTANT and gpu.instant
            value = types.SimpleNamespace(uiVal=int(gpu.watts * gpu.instant_scale * 1000) if ok else 0)
            out.append(types.SimpleNamespace(fieldId=field_id, nvmlReturn=0 if ok else NOT_SUPPORTED, valueType=1,
                                             value=value))
        return out

    def shutdown():
        nv.shutdowns += 1

    def init():
        nv.inits += 1

    def utilization(gpu: FakeGpu):
        nv.reading_threads.add(threading.get_ident())
        return types.SimpleNamespace(gpu=gpu.busy, memory=gpu.busy // 3)

    nv.nvmlInit = init
    nv.nvmlShutdown = shutdown
    nv.nvmlDeviceGetCount = lambda: len(gpus)
    nv.nvmlDeviceGetHandleByIndex = lambda i: gpus[i]
    nv.nvmlDeviceGetHandleByUUID = lambda uuid: gpus[int(uuid.rsplit("-", 1)[1])]
    nv.nvmlDeviceGetUtilizationRates = utilization
    nv.nvmlDeviceGetClockInfo = lambda g, kind: 1900
    nv.nvmlDeviceGetMaxClockInfo = lambda g, kind: 1980
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda g: 700_000
    nv.nvmlDeviceGetPowerUsage = lambda g: int(g.watts * g.average_scale * 1000)
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda g: 0
    nv.nvmlDeviceGetTotalEnergyConsumption = energy
    nv.nvmlDeviceGetFieldValues = field_values
    nv.nvmlDeviceGetMemoryInfo = lambda g: types.SimpleNamespace(used=g.memory_used, total=141 * 2**30)
    return nv
