"""The one NVML helper: the GPUs this process may use, and what each reports at one moment.

The harness's one NVML sampler (gpubench/run/utilisation.py, a thread per worker process) reads the GPUs through
this; the utilisation, the energy (energy.py) and NVML's peak memory (gpu_memory.py) are figures of its readings, so a
GPU is found, read and named the same way in every figure.

Per reading: the busy share (NVML's utilization.gpu: the share of its sample period with a kernel running), the
memory controller's busy share (utilization.memory), the SM clock over its maximum, the power draw over the
enforced limit, the clock-event ("throttle") reasons, the device-wide used memory, and for energy: the total-energy
counter (mJ since the driver loaded; Volta and later) and the instantaneous power (NVML_FI_DEV_POWER_INSTANT, mW).
The averaged power (nvmlDeviceGetPowerUsage) lags a change by about a second (docs/architecture.md, "Energy"): it
serves the power share and, only where the instantaneous field is missing, the power integral.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# NVML's clock-event reason bits (nvml.h, nvmlClocksEventReason*); the power and thermal ones are throttles.
REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
FIELD_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT (nvml.h), for bindings too old to name it
# nvmlValueType_t -> the member of c_nvmlValue_t that holds the value
VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


@dataclass(frozen=True)
class GpuReading:
    """One GPU's NVML figures at one moment: shares in percent, energy in mJ, power in W (None: not reported)."""

    busy_pct: float
    mem_busy_pct: float
    sm_clock_pct: float | None
    power_pct: float | None
    reasons: int  # the clock-event reason bit mask
    energy_mj: int | None = None  # the total-energy counter
    power_w: float | None = None  # instantaneous power, else the averaged reading (power_source says which)
    power_source: str | None = None  # "instant" or "average"
    memory_used_bytes: int | None = None  # device-wide (nvmlDeviceGetMemoryInfo.used)

    @property
    def throttled(self) -> bool:
        return bool(self.reasons & THROTTLE_BITS)


def gpu_reading(raw: dict) -> GpuReading:
    """NVML's raw answers (utilization.gpu/.memory in %, clocks in MHz, power in mW, the reasons mask, the energy
    counter in mJ, the instantaneous power in mW, the used memory in bytes) as a reading."""
    def share(value, top):
        return 100.0 * value / top if value is not None and top else None

    instant, average = raw.get("power_instant_mw"), raw.get("power_mw")
    power_mw, source = (instant, "instant") if instant is not None else (average, "average")
    return GpuReading(busy_pct=float(raw["gpu_util"]), mem_busy_pct=float(raw["mem_util"]),
                      sm_clock_pct=share(raw.get("sm_clock_mhz"), raw.get("sm_clock_max_mhz")),
                      power_pct=share(average, raw.get("power_limit_mw")),
                      reasons=int(raw.get("reasons") or 0),
                      energy_mj=None if raw.get("energy_mj") is None else int(raw["energy_mj"]),
                      power_w=None if power_mw is None else power_mw / 1000.0,
                      power_source=None if power_mw is None else source,
                      memory_used_bytes=None if raw.get("memory_used") is None else int(raw["memory_used"]))


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a figure this GPU does not report (NVML_ERROR_NOT_SUPPORTED)
        return None


class Nvml:
    """The GPUs this process may use (CUDA_VISIBLE_DEVICES: indices or UUIDs), read through nvidia-ml-py."""

    def __init__(self):
        import pynvml

        self.nv = pynvml
        pynvml.nvmlInit()
        self.handles = self._visible()
        self.static = []
        for handle in self.handles:
            self.static.append({
                "sm_clock_max_mhz": _try(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "power_limit_mw": _try(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle),
            })
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        self._instant_field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", FIELD_POWER_INSTANT)

    def _visible(self) -> list:
        nv = self.nv
        wanted = os.environ.get("CUDA_VISIBLE_DEVICES")
        if wanted is None:
            return [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        handles = []
        for item in (w.strip() for w in wanted.split(",") if w.strip()):
            if item.isdigit():
                handles.append(nv.nvmlDeviceGetHandleByIndex(int(item)))
            elif item.startswith(("GPU-", "MIG-")):
                handles.append(nv.nvmlDeviceGetHandleByUUID(item))
            else:
                break  # CUDA stops at the first entry it cannot read
        return handles

    def _power_instant_mw(self, handle) -> float | None:
        values = _try(self.nv.nvmlDeviceGetFieldValues, handle, [self._instant_field])
        if not values or values[0].nvmlReturn != 0:
            return None
        value = values[0]
        member = VALUE_MEMBERS[value.valueType] if 0 <= value.valueType < len(VALUE_MEMBERS) else "uiVal"
        return float(getattr(value.value, member))

    def read(self, counter: bool = True) -> list[GpuReading]:
        """Each visible GPU's figures now; `counter`: with the total-energy counter, which alone takes milliseconds a
        call (2.8-3.1 ms on the H200, the six other calls 1-9 µs), so the sampler asks for it about once a second."""
        nv = self.nv
        out = []
        for handle, static in zip(self.handles, self.static, strict=True):
            util = nv.nvmlDeviceGetUtilizationRates(handle)
            out.append(gpu_reading({
                "gpu_util": util.gpu, "mem_util": util.memory,
                "sm_clock_mhz": _try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
                "power_mw": _try(nv.nvmlDeviceGetPowerUsage, handle),
                "power_instant_mw": self._power_instant_mw(handle),
                "energy_mj": _try(nv.nvmlDeviceGetTotalEnergyConsumption, handle) if counter else None,
                "memory_used": getattr(_try(nv.nvmlDeviceGetMemoryInfo, handle), "used", None),
                "reasons": _try(self._reasons, handle), **static}))
        return out

    def close(self) -> None:
        _try(self.nv.nvmlShutdown)


def open_nvml() -> tuple[Nvml | None, str | None]:
    """NVML when it is there and sees a GPU; else None and why (a CPU machine, no nvidia-ml-py)."""
    try:
        nvml = Nvml()
    except Exception as exc:  # noqa: BLE001 - no driver, no library: host figures only
        return None, f"{type(exc).__name__}: {exc}"[:200]
    if not nvml.handles:
        nvml.close()
        return None, "no GPU visible"
    return nvml, None
