"""Numbers kept as data beside the code: the posts' published results and the GPUs' datasheet peaks.

reference.csv: one published number per row (workload, GPU, setup, metric, value, post date), so a
report can show a run against the post's row for the same GPU class. gpu_peaks.csv: each GPU class's
dense peak TFLOP/s per dtype and its memory bandwidth, from the vendors' datasheets (leads, not
measurements), so a result can say how close to the machine it ran; and its memory, compute capability and
the names a provider gives it, so the launcher can tell whether a workload fits before renting it.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpubench.pricing import best_match
from gpubench.schema import LEGACY_METRICS


@dataclass(frozen=True)
class Published:
    workload: str
    gpu: str
    setup: str
    metric: str
    value: float
    post: str


@dataclass(frozen=True)
class GpuPeak:
    gpu: str
    tflops: dict[str, float]  # dtype -> dense peak TFLOP/s
    bandwidth_gbps: float
    memory_gb: float = 0.0
    compute_capability: tuple[int, int] = (0, 0)
    provider_names: tuple[str, ...] = ()

    @property
    def features(self) -> set[str]:
        """The tensor-core dtypes it has (an fp8 peak means FP8 tensor cores)."""
        return set(self.tflops)


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("gpubench").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


@cache
def published() -> tuple[Published, ...]:
    """The posts' numbers; a peak memory the post gave in GB is read as today's metric, in GiB (schema.py)."""
    out = []
    for r in _rows("reference.csv"):
        metric, factor = LEGACY_METRICS.get(r["metric"], (r["metric"], 1.0))
        out.append(Published(r["workload"], r["gpu"], r["setup"], metric, float(r["value"]) * factor, r["post"]))
    return tuple(out)


@cache
def gpu_peaks() -> dict[str, GpuPeak]:
    peaks = {}
    for r in _rows("gpu_peaks.csv"):
        tflops = {dtype: float(r[dtype]) for dtype in ("bf16", "fp16", "fp8", "tf32", "fp32") if r[dtype]}
        major, minor = r["compute_capability"].split(".")
        peaks[r["gpu"]] = GpuPeak(r["gpu"], tflops, float(r["bandwidth_gbps"]), float(r["memory_gb"]),
                                  (int(major), int(minor)), tuple(filter(None, r["provider_names"].split(";"))))
    return peaks


def _spelling(name: str) -> str:
    return re.sub(r"[\s_-]", "", name).lower()


def gpu_for_provider_name(name: str) -> GpuPeak | None:
    """The GPU a provider's name means (Runcrate's "A100-80GB", "h100-sxm"): its row's name or one of its
    provider_names, ignoring case, spaces, '-' and '_'; None for a GPU the table does not know."""
    wanted = _spelling(name)
    found = [p for p in gpu_peaks().values() if wanted in {_spelling(n) for n in (p.gpu, *p.provider_names)}]
    return found[0] if len(found) == 1 else None


def gpu_class(gpu_name: str, classes) -> str | None:
    """The class ("H100", "RTX5090") that an nvidia-smi name belongs to, the most specific winning."""
    return best_match(classes, [gpu_name])


def published_for(workload: str, gpu_name: str, setup: str, metric: str) -> Published | None:
    rows = [p for p in published() if (p.workload, p.setup, p.metric) == (workload, setup, metric)]
    match = gpu_class(gpu_name, {p.gpu for p in rows})
    return next((p for p in rows if p.gpu == match), None)


def peak_for(gpu_name: str) -> GpuPeak | None:
    match = gpu_class(gpu_name, gpu_peaks())
    return gpu_peaks()[match] if match else None
