"""What bounded a result, read from its own figures: one verdict and the numbers it rests on.

The runner calls `judge` on every ok result once it has its share of the peak, and stores the outcome as
the result's typed `verdict` (label, basis, figures; results before schema 1.2 kept it in info, read as it).
Rules, in order (thresholds and their reasons in data/verdict_thresholds.csv):

  undetermined   fewer than min_samples utilisation samples (or sampling off)
  client-bound   a load-generator process (or its busiest thread) past client_saturated of a core: the result
                 describes the client, whatever the GPU did
  throttled      a power or thermal clock-throttle reason in more than throttled_share of the samples, with the
                 SM clock's mean under throttled_clock of its maximum
  compute-bound  counted FLOP/s at compute_bound_peak of the dtype's datasheet peak, GPU busy >= compute_bound_busy
  memory-bound   achieved bandwidth at memory_bound_bandwidth of the datasheet HBM bandwidth
  storage-bound  a load at storage_bound_read to storage_above_read of a plain read of the same files (cold-start)
  gpu-bound      GPU busy >= gpu_bound_busy with its kernels below both roofs (small or latency-bound kernels)
  host-bound     GPU busy under host_bound_busy while the busiest host thread is saturated
  gpu-and-host-bound  GPU busy from host_bound_busy to under gpu_bound_busy while the busiest host thread is at
                 near_saturated_thread of a core or more: a GPU near full and a host thread near its limit, neither
                 alone the bound; the basis names the thread's process and what would take work off it
                 (data/process_roles.csv's relief)
  undetermined   none of these: the basis says what the figures do show (a load read from the page cache, faster
                 than the disk, says so)

On a CPU (no GPU samples) the host is the device: compute-bound when the process keeps cpu_cores_busy of
its cores busy, host-bound when one thread is saturated while over half the cores stay idle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench.measure import flops
from gpubench.schema import VerdictFacts
from gpubench.verdict_thresholds import thresholds

VERDICTS = ("compute-bound", "memory-bound", "storage-bound", "gpu-bound", "host-bound", "gpu-and-host-bound",
            "client-bound", "throttled", "undetermined")
# where no sampled process's thread is the busiest one: a workload's own Python thread, launching kernels
DEFAULT_RELIEF = "fewer kernel launches or less Python per step (CUDA graphs, torch.compile, larger batches)"

STORAGE_RATE, STORAGE_CEILING = "load_read_gbps", "raw_read_gbps"  # cold-start's load and plain read, GB/s


@dataclass
class Verdict:
    label: str
    basis: str
    figures: dict[str, float] = field(default_factory=dict)

    def facts(self) -> VerdictFacts:
        return VerdictFacts(label=self.label, basis=self.basis,
                            figures={k: round(v, 2) for k, v in self.figures.items()})


def judge(values: dict[str, float]) -> Verdict:
    """The verdict for one result's metric values (name -> number); `cores` (the CPUs the sampler saw) and
    `on_gpu` (1 when the result's device is a GPU) come from its info and device."""
    t = thresholds()
    v = values.get
    samples = v("util_samples", 0)
    if "util_samples" not in values:
        return Verdict("undetermined", "not sampled: the result has no utilisation figures (GPUBENCH_UTILISATION=off,"
                                       " or written before gpubench sampled them)", {})
    if samples < t["min_samples"]:
        return Verdict("undetermined", f"{samples:.0f} utilisation samples (fewer than {t['min_samples']:.0f})",
                       {"util_samples": samples})
    client = max(v("client_cpu_pct", 0), v("client_thread_pct", 0))
    if client > t["client_saturated"]:
        figures = {name: values[name] for name in ("util_samples", "client_cpu_pct", "client_thread_pct",
                                                   "gpu_busy_pct") if name in values}
        return Verdict("client-bound", f"gpubench's load generator used {client:.0f}% of a core in its busiest"
                                       f" process (> {t['client_saturated']:.0f}%): the figures describe the"
                                       f" client as much as the server", figures)
    if v("gpu_busy_pct") is None:
        if v("on_gpu"):
            return Verdict("undetermined", "ran on a GPU but no GPU figures were read (NVML unavailable)",
                           {"util_samples": samples})
        return _judge_cpu(values, t)
    busy, thread = v("gpu_busy_pct"), v("busiest_thread_pct")
    figures = {name: values[name] for name in ("util_samples", "gpu_busy_pct", "busiest_thread_pct",
                                               flops.PEAK_METRIC, flops.BANDWIDTH_PEAK_METRIC, "throttled_pct",
                                               "sm_clock_pct", "power_pct") if name in values}
    seen = _describe(figures)
    clock = v("sm_clock_pct")
    if v("throttled_pct", 0) > t["throttled_share"] and clock is not None and clock < t["throttled_clock"]:
        return Verdict("throttled", f"power/thermal throttle reason in {v('throttled_pct'):.0f}% of samples "
                                    f"(> {t['throttled_share']:.0f}%) with the SM clock at {clock:.0f}% of its "
                                    f"maximum (< {t['throttled_clock']:.0f}%); {seen}", figures)
    peak = v(flops.PEAK_METRIC)
    if peak is not None and peak >= t["compute_bound_peak"] and busy >= t["compute_bound_busy"]:
        return Verdict("compute-bound", f"{peak:.0f}% of peak FLOP/s (>= {t['compute_bound_peak']:.0f}%) with the GPU"
                                        f" busy {busy:.0f}% (>= {t['compute_bound_busy']:.0f}%); {seen}", figures)
    bandwidth = v(flops.BANDWIDTH_PEAK_METRIC)
    if bandwidth is not None and bandwidth >= t["memory_bound_bandwidth"]:
        return Verdict("memory-bound", f"{bandwidth:.0f}% of peak HBM bandwidth (>= "
                                       f"{t['memory_bound_bandwidth']:.0f}%); {seen}", figures)
    storage = _storage_share(values)
    if storage is not None:
        figures["load_over_raw_read_pct"] = storage
        if t["storage_bound_read"] <= storage <= t["storage_above_read"]:
            return Verdict("storage-bound", f"load at {storage:.0f}% of a plain read of the same files (>= "
                                            f"{t['storage_bound_read']:.0f}%); {seen}", figures)
        cached = (f"load at {storage:.0f}% of a plain cold read of the same files (> {t['storage_above_read']:.0f}%):"
                  f" the page cache served it, so the disk did not bound it")
    else:
        cached = None
    if busy >= t["gpu_bound_busy"]:
        return Verdict("gpu-bound", f"GPU busy {busy:.0f}% (>= {t['gpu_bound_busy']:.0f}%) {_below_roofs(values, t)}; "
                                    f"{seen}", figures)
    if busy < t["host_bound_busy"] and thread is not None and thread >= t["saturated_thread"]:
        figures.update({name: values[name] for name in _host_roles() if name in values})
        return Verdict("host-bound", f"GPU busy {busy:.0f}% (< {t['host_bound_busy']:.0f}%) while the busiest host"
                                     f" thread{_whose(values, thread)} used {thread:.0f}% of a core (>="
                                     f" {t['saturated_thread']:.0f}%)", figures)
    if busy >= t["host_bound_busy"] and thread is not None and thread >= t["near_saturated_thread"]:
        figures.update({name: values[name] for name in _host_roles() if name in values})
        return Verdict("gpu-and-host-bound",
                       f"GPU busy {busy:.0f}% ({t['host_bound_busy']:.0f}-{t['gpu_bound_busy']:.0f}%: near full) with"
                       f" the busiest host thread{_whose(values, thread)} at {thread:.0f}% of a core (>="
                       f" {t['near_saturated_thread']:.0f}%: near its limit): neither alone is the bound; what would"
                       f" move it: {_relief(values, thread)}, then a faster GPU; {seen}", figures)
    if cached:
        return Verdict("undetermined", f"{cached}; neither the GPU nor one host thread was saturated either: what bound"
                                       f" it (memory copies, the transfer to the GPU) is outside the sampled figures;"
                                       f" {seen}", figures)
    return Verdict("undetermined", f"no rule met: {seen}", figures)


def _below_roofs(values: dict[str, float], t: dict[str, float]) -> str:
    """What a busy GPU's kernels reached of the two roofs (each under its bound, or a rule above would have named
    it), and what that leaves as the cause."""
    peak, bandwidth = values.get(flops.PEAK_METRIC), values.get(flops.BANDWIDTH_PEAK_METRIC)
    compute = f"{peak:.0f}% of peak FLOP/s (< {t['compute_bound_peak']:.0f}%)" if peak is not None else None
    memory = (f"{bandwidth:.0f}% of peak HBM bandwidth (< {t['memory_bound_bandwidth']:.0f}%)"
              if bandwidth is not None else None)
    if compute and memory:
        return f"below both roofs ({compute}, {memory}): small or latency-bound kernels, launch gaps inside a busy GPU"
    if compute:
        return (f"below the compute roof ({compute}; bandwidth not measured): small, latency- or memory-bound "
                f"kernels, launch gaps inside a busy GPU")
    if memory:
        return (f"below the memory roof ({memory}; FLOP/s not counted): small or latency-bound kernels, launch gaps "
                f"inside a busy GPU")
    return "(neither roof measured: no FLOP count, no bandwidth model)"


def _judge_cpu(values: dict[str, float], t: dict[str, float]) -> Verdict:
    """No GPU figures: the host is the device; read its occupancy."""
    cpu, thread, cores = values.get("host_cpu_pct"), values.get("busiest_thread_pct"), values.get("cores")
    figures = {name: values[name] for name in ("util_samples", "host_cpu_pct", "busiest_thread_pct", "cores")
               if name in values}
    if cpu is None or thread is None or not cores:
        return Verdict("undetermined", "no GPU and no host figures", figures)
    occupied = cpu / cores  # % of all allowed cores
    if occupied >= t["cpu_cores_busy"]:
        return Verdict("compute-bound", f"no GPU: the process kept {occupied:.0f}% of its {cores:.0f} cores busy "
                                        f"(>= {t['cpu_cores_busy']:.0f}%)", figures)
    if thread >= t["saturated_thread"] and occupied < 50:
        return Verdict("host-bound", f"no GPU: one thread at {thread:.0f}% of a core (>= {t['saturated_thread']:.0f}%)"
                                     f" while {100 - occupied:.0f}% of the {cores:.0f} cores stayed idle", figures)
    return Verdict("undetermined", f"no GPU: process at {cpu:.0f}% of a core on {cores:.0f} cores, busiest thread "
                                   f"{thread:.0f}%", figures)


def _host_roles() -> dict[str, str]:
    """The host's processes the utilisation sampler tells apart (data/process_roles.csv): metric -> label."""
    from gpubench.process_roles import ROLE_LABELS

    return {f"{role}_thread_pct": label for role, label in ROLE_LABELS.items()}


def _busiest_role(values: dict[str, float], thread: float) -> str | None:
    """The sampled role whose busiest thread is the host's busiest (within 5 points), if one is."""
    from gpubench.process_roles import ROLE_LABELS

    shares = {role: values[f"{role}_thread_pct"] for role in ROLE_LABELS if f"{role}_thread_pct" in values}
    if not shares:
        return None
    role, share = max(shares.items(), key=lambda item: item[1])
    return role if share >= thread - 5 else None


def _whose(values: dict[str, float], thread: float) -> str:
    """' (vLLM's engine core)' when a sampled role's busiest thread is the host's busiest (within 5 points)."""
    from gpubench.process_roles import ROLE_LABELS

    role = _busiest_role(values, thread)
    return f" ({ROLE_LABELS[role]})" if role else ""


def _relief(values: dict[str, float], thread: float) -> str:
    """What would take work off the busiest host thread: its process's relief (data/process_roles.csv)."""
    from gpubench.process_roles import ROLE_RELIEF

    role = _busiest_role(values, thread)
    return ROLE_RELIEF[role] if role else DEFAULT_RELIEF


def _storage_share(values: dict[str, float]) -> float | None:
    rate, ceiling = values.get(STORAGE_RATE), values.get(STORAGE_CEILING)
    return 100.0 * rate / ceiling if rate and ceiling else None


def _describe(figures: dict[str, float]) -> str:
    labels = {"gpu_busy_pct": "GPU busy {:.0f}%", "busiest_thread_pct": "busiest thread {:.0f}% of a core",
              flops.PEAK_METRIC: "{:.0f}% of peak FLOP/s", flops.BANDWIDTH_PEAK_METRIC: "{:.0f}% of peak bandwidth",
              "sm_clock_pct": "SM clock {:.0f}% of max", "power_pct": "power {:.0f}% of limit"}
    return ", ".join(fmt.format(figures[name]) for name, fmt in labels.items() if name in figures)


def per_setup(results) -> dict[str, str]:
    """Each setup's verdict over its ok results: one label, or the labels with their counts when repeats differ."""
    labels: dict[str, list[str]] = {}
    for result in results:
        if result.status == "ok" and result.verdict is not None:
            labels.setdefault(result.setup, []).append(result.verdict.label)
    out = {}
    for setup, seen in labels.items():
        distinct = list(dict.fromkeys(seen))
        out[setup] = distinct[0] if len(distinct) == 1 else ", ".join(f"{d} ({seen.count(d)}/{len(seen)})"
                                                                      for d in distinct)
    return out
