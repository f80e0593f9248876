"""What the machine did while a setup was measured: a thread of the worker samples NVML and /proc.

Every SAMPLE_S, for each GPU visible to the worker (NVML): the busy share (NVML's utilization.gpu: the
share of its sample period with a kernel running), the memory controller's busy share (utilization.memory),
the SM clock over its maximum, the power draw over the enforced limit, and the clock-event ("throttle")
reasons. On the host (/proc): the CPU time of the worker and of the processes it started (a server), per
thread, from which the process's CPU use and its busiest thread's share of one core (a launch-bound loop
shows one thread near 100%). The sampler thread leaves itself out. Each process is given a role when first
seen (data/process_roles.csv: gpubench's client processes, vLLM's API server, its engine core), and each
role's busiest thread gets its own figure, so a saturated host names which of them it was.

Samples taken while the workload's phase is one of its timed phases (module TIMED_PHASES, default
("timed",)) are the ones summarised; a setup that reports no timed phase is summarised over all of it,
and info says which. Each figure is stored as a mean and a p90 over those samples, with their count.
GPU figures are of the busiest visible GPU (the one the setup used, when it used one of several).
"""

from __future__ import annotations

import csv
import os
import threading
import time
from dataclasses import dataclass, field
from importlib import resources

from gpubench.workload import MetricDef

SAMPLE_S = 0.05
TREE_REFRESH_S = 1.0  # how often the set of processes (the worker and its children) is read again
OFF_VARIABLE = "GPUBENCH_UTILISATION"  # "off": no sampling (to show what the sampling costs)
DEFAULT_TIMED_PHASES = ("timed",)

# NVML's clock-event reason bits (nvml.h, nvmlClocksEventReason*); the power and thermal ones are throttles.
REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80

METRICS = {
    "util_samples": MetricDef("samples", None, "utilisation samples over the timed part (about every 50 ms)"),
    "gpu_busy_pct": MetricDef("%", None, "GPU busy share: time with a kernel running (NVML), mean"),
    "gpu_busy_p90_pct": MetricDef("%", None, "GPU busy share, 90th percentile of the samples"),
    "gpu_mem_busy_pct": MetricDef("%", None, "memory controller busy share (NVML utilization.memory), mean"),
    "gpu_mem_busy_p90_pct": MetricDef("%", None, "memory controller busy share, 90th percentile"),
    "sm_clock_pct": MetricDef("%", None, "SM clock over its maximum, mean"),
    "sm_clock_p90_pct": MetricDef("%", None, "SM clock over its maximum, 90th percentile"),
    "power_pct": MetricDef("%", None, "power draw over the enforced power limit, mean"),
    "power_p90_pct": MetricDef("%", None, "power draw over the enforced power limit, 90th percentile"),
    "throttled_pct": MetricDef("%", None, "share of samples with a power or thermal clock-throttle reason"),
    "host_cpu_pct": MetricDef("% of a core", None, "CPU use of the worker and its child processes, mean"),
    "host_cpu_p90_pct": MetricDef("% of a core", None, "CPU use of the worker and its children, 90th percentile"),
    "busiest_thread_pct": MetricDef("% of a core", None, "the busiest host thread's share of one core, mean"),
    "busiest_thread_p90_pct": MetricDef("% of a core", None, "the busiest host thread's share, 90th percentile"),
}


def _role_rows() -> list[dict[str, str]]:
    text = resources.files("gpubench").joinpath("data", "process_roles.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


ROLE_ROWS = _role_rows()
ROLE_LABELS = {row["role"]: row["label"] for row in ROLE_ROWS}
METRICS.update({f"{role}_thread_pct": MetricDef("% of a core", None, f"the busiest thread of {label}, mean")
                for role, label in ROLE_LABELS.items()})


def enabled() -> bool:
    return os.environ.get(OFF_VARIABLE, "").lower() not in ("off", "0", "no", "false")


@dataclass(frozen=True)
class GpuReading:
    """One GPU's NVML figures at one moment, as shares (percent)."""

    busy_pct: float
    mem_busy_pct: float
    sm_clock_pct: float | None
    power_pct: float | None
    reasons: int  # the clock-event reason bit mask

    @property
    def throttled(self) -> bool:
        return bool(self.reasons & THROTTLE_BITS)


def gpu_reading(raw: dict) -> GpuReading:
    """NVML's raw answers (utilization.gpu/.memory in %, clocks in MHz, power in mW, the reasons mask) as shares."""
    def share(value, top):
        return 100.0 * value / top if value is not None and top else None

    return GpuReading(busy_pct=float(raw["gpu_util"]), mem_busy_pct=float(raw["mem_util"]),
                      sm_clock_pct=share(raw.get("sm_clock_mhz"), raw.get("sm_clock_max_mhz")),
                      power_pct=share(raw.get("power_mw"), raw.get("power_limit_mw")),
                      reasons=int(raw.get("reasons") or 0))


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


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
                "sm_clock_max_mhz": self._try(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM),
                "power_limit_mw": self._try(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle),
            })
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons

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

    @staticmethod
    def _try(fn, *args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - a figure this GPU does not report (NVML_ERROR_NOT_SUPPORTED)
            return None

    def read(self) -> list[GpuReading]:
        nv = self.nv
        out = []
        for handle, static in zip(self.handles, self.static, strict=True):
            util = nv.nvmlDeviceGetUtilizationRates(handle)
            out.append(gpu_reading({
                "gpu_util": util.gpu, "mem_util": util.memory,
                "sm_clock_mhz": self._try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
                "power_mw": self._try(nv.nvmlDeviceGetPowerUsage, handle),
                "reasons": self._try(self._reasons, handle), **static}))
        return out

    def close(self) -> None:
        self._try(self.nv.nvmlShutdown)


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


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def process_tree(root: int) -> list[int]:
    """root and every process below it."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += _children(pid)
    return seen


def thread_cpu_ns(pids: list[int], skip_tid: int | None = None) -> dict[tuple[int, int], int]:
    """CPU time (ns) of every thread of pids: schedstat's run time, else stat's utime + stime in ticks.
    os.open/os.read, not open(): a vLLM server on a GPU has hundreds of threads, read 20 times a second from a
    thread that shares the worker's GIL, and a file object costs three times the syscalls' time."""
    tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            if int(tid) == skip_tid:
                continue
            try:
                out[(pid, int(tid))] = int(_read(f"/proc/{pid}/task/{tid}/schedstat").split(None, 1)[0])
            except (OSError, ValueError, IndexError):
                try:
                    fields = _read(f"/proc/{pid}/task/{tid}/stat").rsplit(b")", 1)[1].split()
                    out[(pid, int(tid))] = int((int(fields[11]) + int(fields[12])) * tick_ns)
                except (OSError, ValueError, IndexError):
                    continue
    return out


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def process_role(pid: int) -> str | None:
    """The role data/process_roles.csv gives this process (by its comm or command line), or None."""
    try:
        comm = _read(f"/proc/{pid}/comm").decode(errors="replace").strip()
        cmdline = _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    for row in ROLE_ROWS:
        if row["pattern"] in (comm if row["field"] == "comm" else cmdline):
            return row["role"]
    return None


def thread_name(pid: int, tid: int) -> str:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


@dataclass
class Sample:
    t: float
    timed: bool
    gpus: list[GpuReading]
    threads: dict[tuple[int, int], int]


def host_shares(before: Sample, after: Sample) -> tuple[float, float, tuple[int, int] | None]:
    """(process CPU in % of a core, busiest thread in % of a core, that thread) between two samples."""
    wall_ns = (after.t - before.t) * 1e9
    if wall_ns <= 0:
        return 0.0, 0.0, None
    deltas = {key: ns - before.threads.get(key, 0) for key, ns in after.threads.items()}
    deltas = {key: max(0, d) for key, d in deltas.items()}
    if not deltas:
        return 0.0, 0.0, None
    top = max(deltas, key=deltas.get)
    return 100.0 * sum(deltas.values()) / wall_ns, 100.0 * deltas[top] / wall_ns, top


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def p90(values: list[float]) -> float:
    """The nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


@dataclass
class Utilisation:
    """The summarised samples: metrics (METRICS' names) and facts for info."""

    metrics: dict[str, float] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def role_shares(before: Sample, after: Sample, roles: dict[int, str]) -> dict[str, float]:
    """Each role's busiest thread between two samples, in % of a core."""
    wall_ns = (after.t - before.t) * 1e9
    out: dict[str, float] = {}
    if wall_ns <= 0:
        return out
    for (pid, tid), ns in after.threads.items():
        role = roles.get(pid)
        if role:
            share = 100.0 * max(0, ns - before.threads.get((pid, tid), 0)) / wall_ns
            out[role] = max(out.get(role, 0.0), share)
    return out


def summarise(samples: list[Sample], cores: int, names: dict[tuple[int, int], str] | None = None,
              roles: dict[int, str] | None = None) -> Utilisation:
    """Means and p90s over the timed samples (all samples when none was timed)."""
    timed = any(s.timed for s in samples)
    chosen = [i for i, s in enumerate(samples) if s.timed or not timed]
    info: dict = {"scope": "timed" if timed else "setup (no timed phase reported)", "sample_s": SAMPLE_S,
                  "cores": cores}
    metrics: dict[str, float] = {"util_samples": float(len(chosen))}
    gpu_rows = [samples[i].gpus for i in chosen if samples[i].gpus]
    if gpu_rows:
        count = len(gpu_rows[0])
        per_gpu = [mean([row[g].busy_pct for row in gpu_rows]) for g in range(count)]
        busiest = max(range(count), key=per_gpu.__getitem__)
        readings = [row[busiest] for row in gpu_rows]
        info["gpu_index"] = busiest
        if count > 1:
            info["gpu_busy_pct_each"] = [round(b, 1) for b in per_gpu]
        for name, values in (("gpu_busy", [r.busy_pct for r in readings]),
                             ("gpu_mem_busy", [r.mem_busy_pct for r in readings]),
                             ("sm_clock", [r.sm_clock_pct for r in readings if r.sm_clock_pct is not None]),
                             ("power", [r.power_pct for r in readings if r.power_pct is not None])):
            if values:
                metrics[f"{name}_pct"], metrics[f"{name}_p90_pct"] = mean(values), p90(values)
        metrics["throttled_pct"] = 100.0 * sum(r.throttled for r in readings) / len(readings)
        seen: dict[str, int] = {}
        for r in readings:
            for name in reason_names(r.reasons):
                seen[name] = seen.get(name, 0) + 1
        info["clock_event_reasons_pct"] = {name: round(100.0 * n / len(readings), 1) for name, n in seen.items()}
    # Intervals inside the part: the one that ends at its first reading belongs to what came before.
    host = [host_shares(samples[i - 1], samples[i]) for i in chosen if i > 0 and (samples[i - 1].timed or not timed)]
    if host:
        metrics["host_cpu_pct"], metrics["host_cpu_p90_pct"] = mean([h[0] for h in host]), p90([h[0] for h in host])
        metrics["busiest_thread_pct"] = mean([h[1] for h in host])
        metrics["busiest_thread_p90_pct"] = p90([h[1] for h in host])
        tops: dict[tuple[int, int], int] = {}
        for _, _, key in host:
            if key:
                tops[key] = tops.get(key, 0) + 1
        if tops:
            pid, tid = max(tops, key=tops.get)
            label = (names or {}).get((pid, tid)) or thread_name(pid, tid)
            role = ROLE_LABELS.get((roles or {}).get(pid), "")
            info["busiest_thread"] = (f"{label}{f', {role}' if role else ''} (pid {pid}, tid {tid}; busiest in"
                                      f" {tops[(pid, tid)]} of {len(host)})")
    if roles:
        per_role: dict[str, list[float]] = {}
        pairs = [(samples[i - 1], samples[i]) for i in chosen if i > 0 and (samples[i - 1].timed or not timed)]
        for before, after in pairs:
            for role, share in role_shares(before, after, roles).items():
                per_role.setdefault(role, []).append(share)
        for role, shares in per_role.items():
            metrics[f"{role}_thread_pct"] = sum(shares) / len(pairs)
    return Utilisation(metrics=metrics, info=info)


class Sampler:
    """A daemon thread that samples until stop(); mark(timed) follows the workload's phases.

    Entering and leaving the timed part each take a sample on the spot, so a timed part, however short and however
    busy the cores, has its first and last readings and one host interval at least; the thread fills in between."""

    def __init__(self, nvml: Nvml | None, interval: float = SAMPLE_S, root: int | None = None):
        self.nvml, self.interval, self.root = nvml, interval, root or os.getpid()
        self.samples: list[Sample] = []
        self.timed = False
        self._names: dict[tuple[int, int], str] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pids, self._refreshed = process_tree(self.root), time.monotonic()
        self._roles: dict[int, str | None] = {pid: process_role(pid) for pid in self._pids}
        self._sampler_tid: int | None = None
        self._thread = threading.Thread(target=self._loop, name="gpubench-utilisation", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def mark(self, timed: bool) -> None:
        if timed != self.timed:
            self._take(timed=True)  # the timed part's first reading, or its last
        self.timed = timed

    def _take(self, timed: bool) -> None:
        with self._lock:  # the thread and mark() from the workload's thread
            now = time.monotonic()
            if now - self._refreshed >= TREE_REFRESH_S:
                self._pids, self._refreshed = process_tree(self.root), now
                for pid in self._pids:
                    if not self._roles.get(pid):  # again until it has one: a client names itself once started
                        self._roles[pid] = process_role(pid)
            try:
                gpus = self.nvml.read() if self.nvml else []
            except Exception:  # noqa: BLE001 - one failed read is one missing sample, not a failed setup
                gpus = []
            threads = thread_cpu_ns(self._pids, skip_tid=self._sampler_tid)
            self.samples.append(Sample(time.monotonic(), timed, gpus, threads))

    def _loop(self) -> None:
        self._sampler_tid = threading.get_native_id()
        while True:
            self._take(self.timed)
            if self._stop.wait(self.interval):
                return

    def stop(self) -> Utilisation:
        self.mark(False)  # a setup that returns inside its timed part: that part's last reading
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            samples = sorted(self.samples, key=lambda sample: sample.t)
        names = {}
        if len(samples) > 1:  # name the busiest threads while they still exist
            for before, after in zip(samples, samples[1:], strict=False):
                key = host_shares(before, after)[2]
                if key and key not in names:
                    names[key] = thread_name(*key)
        roles = {pid: role for pid, role in self._roles.items() if role}
        return summarise(samples, len(os.sched_getaffinity(0)), names, roles)
