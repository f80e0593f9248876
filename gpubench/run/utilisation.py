"""What the machine did while a setup was measured: a thread of the worker samples NVML and /proc.

It is the process's one NVML sampler: the utilisation and energy figures and NVML's peak memory (the memory
tracker, gpubench/measure/gpu_memory.py, reads `memory_peak`) are all of its readings.

Every SAMPLE_S, for each GPU visible to the worker (NVML): the busy share (NVML's utilization.gpu: the share of its
sample period with a kernel running), the memory controller's busy share (utilization.memory), the SM clock over its
maximum, the power draw over the enforced limit, the clock-event ("throttle") reasons and the instantaneous power;
the total-energy counter every COUNTER_S and at each end of a timed or memory part (one call of it takes as long as
a reading's other calls a thousand times over: 3 ms on the H200). On the host (/proc): the CPU time of the worker
and of the processes it started (a server), per thread, from which the process's CPU use and its busiest thread's
share of one core (a launch-bound loop shows one thread near 100%). The sampler thread leaves itself out. Each
process is given a role when first seen (data/process_roles.csv: gpubench's client processes, vLLM's API server, its
engine core), and each role's busiest thread gets its own figure, so a saturated host names which of them it was.

Samples taken while the workload's phase is one of its timed phases (module TIMED_PHASES, default
("timed",)) are the ones summarised; a setup that reports no timed phase is summarised over all of it,
and the result's `utilisation` (schema.UtilisationFacts) says which, with the busiest thread, the samples and the
time they span. Each figure is stored as a mean and a p90 over those samples, with their count.
GPU figures are of the busiest visible GPU (the one the setup used, when it used one of several); energy
(gpubench/measure/energy.py) is summed over the setup's GPUs, from the same readings. NVML is read through
gpubench/measure/nvml.py, the one NVML helper.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from gpubench.measure import energy
from gpubench.measure.nvml import GpuReading, Nvml, gpu_reading, open_nvml, reason_names  # noqa: F401 - the sampler's API
from gpubench.process_roles import ROLE_LABELS, ROLE_ROWS
from gpubench.schema import BusiestThread, UtilisationFacts
from gpubench.workload import MetricDef

SAMPLE_S = 0.05
COUNTER_S = 1.0  # how often the thread reads the total-energy counter between the parts' ends (nvml.Nvml.read)
TREE_REFRESH_S = 1.0  # how often the set of processes (the worker and its children) is read again
OFF_VARIABLE = "GPUBENCH_UTILISATION"  # "off": no sampling (to show what the sampling costs)
DEFAULT_TIMED_PHASES = ("timed",)

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
    **energy.METRICS,
}


METRICS.update({f"{role}_thread_pct": MetricDef("% of a core", None, f"the busiest thread of {label}, mean")
                for role, label in ROLE_LABELS.items()})


def enabled() -> bool:
    return os.environ.get(OFF_VARIABLE, "").lower() not in ("off", "0", "no", "false")


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
    leaving: bool = False  # the timed part's last reading: the interval after it is outside the part


def in_part(samples: list[Sample], timed: bool) -> list[tuple[Sample, Sample]]:
    """The intervals between consecutive samples that lie inside the timed part (all of them when none was timed):
    the one that ends at the part's first reading belongs to what came before, the one after its last to what
    follows."""
    return [(a, b) for a, b in zip(samples, samples[1:], strict=False)
            if not timed or (a.timed and b.timed and not a.leaving)]


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
    """The summarised samples: metrics (METRICS' names) and what they cover."""

    metrics: dict[str, float] = field(default_factory=dict)
    facts: UtilisationFacts = field(default_factory=UtilisationFacts)
    energy: energy.Energy = field(default_factory=lambda: energy.Energy(absent="no GPU readings"))


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
              roles: dict[int, str] | None = None, gpus_used: int = 1) -> Utilisation:
    """Means and p90s over the timed samples (all samples when none was timed); energy over the timed part of the
    `gpus_used` busiest GPUs (a setup's ranks, one GPU each)."""
    timed = any(s.timed for s in samples)
    chosen = [i for i, s in enumerate(samples) if s.timed or not timed]
    intervals = in_part(samples, timed)
    facts = UtilisationFacts(scope="timed" if timed else "setup", samples=len(chosen), sample_s=SAMPLE_S, cores=cores,
                             seconds=round(sum(b.t - a.t for a, b in intervals), 3))
    metrics: dict[str, float] = {"util_samples": float(len(chosen))}
    figures = Utilisation(metrics=metrics, facts=facts)
    gpu_rows = [samples[i].gpus for i in chosen if samples[i].gpus]
    if gpu_rows:
        count = len(gpu_rows[0])
        per_gpu = [mean([row[g].busy_pct for row in gpu_rows]) for g in range(count)]
        busiest = max(range(count), key=per_gpu.__getitem__)
        readings = [row[busiest] for row in gpu_rows]
        facts.gpu_index = busiest
        if count > 1:
            facts.gpu_busy_pct_each = [round(b, 1) for b in per_gpu]
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
        facts.clock_event_reasons_pct = {name: round(100.0 * n / len(readings), 1) for name, n in seen.items()}
        used = sorted(sorted(range(count), key=per_gpu.__getitem__, reverse=True)[:max(1, gpus_used)])
        spans = [(a.t, a.gpus, b.t, b.gpus) for a, b in in_part([s for s in samples if s.gpus], timed)]
        figures.energy = energy.over(spans, used)
        metrics.update(figures.energy.metrics())
    host = [host_shares(a, b) for a, b in intervals]
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
            facts.busiest_thread = BusiestThread(
                name=(names or {}).get((pid, tid)) or thread_name(pid, tid), role=(roles or {}).get(pid), pid=pid,
                tid=tid, busiest_in=tops[(pid, tid)], intervals=len(host))
    if roles:
        per_role: dict[str, list[float]] = {}
        pairs = [(samples[i - 1], samples[i]) for i in chosen if i > 0 and (samples[i - 1].timed or not timed)]
        for before, after in pairs:
            for role, share in role_shares(before, after, roles).items():
                per_role.setdefault(role, []).append(share)
        for role, shares in per_role.items():
            metrics[f"{role}_thread_pct"] = sum(shares) / len(pairs)
    return figures


class Sampler:
    """A daemon thread that samples until stop(); mark(timed) follows the workload's phases.

    Entering and leaving the timed part each take a sample on the spot, so a timed part, however short and however
    busy the cores, has its first and last readings and one host interval at least; the thread fills in between."""

    def __init__(self, nvml: Nvml | None, interval: float = SAMPLE_S, root: int | None = None, gpus_used: int = 1):
        self.nvml, self.interval, self.root = nvml, interval, root or os.getpid()
        self.gpus_used = gpus_used  # the setup's ranks: its energy sums this many of the busiest GPUs
        self.samples: list[Sample] = []
        self.timed = False
        self._names: dict[tuple[int, int], str] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pids, self._refreshed = process_tree(self.root), time.monotonic()
        self._counter_read = -COUNTER_S  # when the energy counter was last read: the first reading reads it
        self._roles: dict[int, str | None] = {pid: process_role(pid) for pid in self._pids}
        self._sampler_tid: int | None = None
        self._thread = threading.Thread(target=self._loop, name="gpubench-utilisation", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def mark(self, timed: bool) -> None:
        # One lock for the reading and the phase: the thread never files a reading under the phase just left.
        with self._lock:
            if timed != self.timed:
                # the timed part's first reading, or its last: its energy is the counter's difference between them
                self._take(timed=True, leaving=not timed, counter=True)
            self.timed = timed

    def _take(self, timed: bool, leaving: bool = False, counter: bool = False) -> None:
        """One reading; the caller holds the lock (the thread and mark() from the workload's thread). The energy
        counter when `counter` or COUNTER_S after its last reading (energy.over bridges the readings between)."""
        now = time.monotonic()
        counter = counter or now - self._counter_read >= COUNTER_S
        if counter:
            self._counter_read = now
        if now - self._refreshed >= TREE_REFRESH_S:
            self._pids, self._refreshed = process_tree(self.root), now
            for pid in self._pids:
                if not self._roles.get(pid):  # again until it has one: a client names itself once started
                    self._roles[pid] = process_role(pid)
        try:
            gpus = self.nvml.read(counter=counter) if self.nvml else []
        except Exception:  # noqa: BLE001 - one failed read is one missing sample, not a failed setup
            gpus = []
        threads = thread_cpu_ns(self._pids, skip_tid=self._sampler_tid)
        self.samples.append(Sample(time.monotonic(), timed, gpus, threads, leaving))

    def reading_now(self) -> int:
        """A reading on the spot (the peak-memory tracker's ends of a part: gpubench/measure/gpu_memory.py); its
        position among the readings."""
        with self._lock:
            self._take(self.timed, counter=True)
            return len(self.samples) - 1

    def memory_peak(self, since: int, gpu: int) -> int | None:
        """The most used memory of visible GPU `gpu` over the readings from position `since` on; None: none had it."""
        with self._lock:
            used = [s.gpus[gpu].memory_used_bytes for s in self.samples[since:] if len(s.gpus) > gpu]
        return max((u for u in used if u is not None), default=None)

    def _loop(self) -> None:
        self._sampler_tid = threading.get_native_id()
        while True:
            with self._lock:
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
        return summarise(samples, len(os.sched_getaffinity(0)), names, roles, self.gpus_used)
