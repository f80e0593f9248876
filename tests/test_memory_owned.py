"""Peak memory is the harness's (gpubench/measure/gpu_memory.MemoryTracker, `ctx.memory`): no module under workloads/
resets or reads torch's allocator statistics (torch.cuda.reset_peak_memory_stats, max_memory_allocated,
memory_stats...) or opens NVML (pynvml) itself; the worker's one NVML sampler reads the GPUs for every figure."""

from __future__ import annotations

import ast
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
TORCH_MEMORY = {  # torch.cuda's (and torch.cuda.memory's) allocator statistics
    "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
    "reset_accumulated_memory_stats", "max_memory_allocated", "max_memory_reserved", "max_memory_cached",
    "memory_allocated", "memory_reserved", "memory_cached", "memory_stats", "memory_stats_as_nested_dict",
    "memory_summary", "mem_get_info",
}


def offending(source: str, name: str = "<snippet>") -> list[str]:
    """`file:line: what` for each use of torch's allocator statistics or of NVML in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in TORCH_MEMORY:
            owner = node.value
            owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if owner_name in ("cuda", "memory"):
                found.append(f"{name}:{node.lineno}: {owner_name}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch.cuda"):
            found += [f"{name}:{node.lineno}: from {node.module} import {alias.name}" for alias in node.names
                      if alias.name in TORCH_MEMORY]
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{name}:{node.lineno}: import {m}" for m in modules if m.split(".")[0] == "pynvml"]
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))


def test_the_check_finds_a_workloads_own_memory_reading():
    source = "\n".join([
        "import torch",
        "from torch.cuda import max_memory_allocated",
        "def run(device):",
        "    torch.cuda.reset_peak_memory_stats()",
        "    peak = torch.cuda.max_memory_allocated(device)",
        "    stats = torch.cuda.memory.memory_stats()",
        "    import pynvml",
        "    total = torch.cuda.get_device_properties(device).total_memory",  # a limit, not a peak
        "    torch.cuda.set_per_process_memory_fraction(0.5, device)",
    ])
    assert offending(source, "w.py") == [
        "w.py:2: from torch.cuda import max_memory_allocated", "w.py:4: cuda.reset_peak_memory_stats",
        "w.py:5: cuda.max_memory_allocated", "w.py:6: memory.memory_stats", "w.py:7: import pynvml"]


def test_no_workload_measures_memory_itself():
    modules = sorted(WORKLOADS.rglob("*.py"))
    assert len(modules) > 20  # the catalog's workloads, not an empty folder
    found = [hit for path in modules for hit in offending(path.read_text(), str(path.relative_to(WORKLOADS)))]
    assert found == [], "read peak memory through ctx.memory (gpubench/measure/gpu_memory.py):\n" + "\n".join(found)
