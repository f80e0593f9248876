"""Every workload times through gpubench/measure/timing.Timed: no module under workloads/ reads a clock
(time.perf_counter, time.time, time.monotonic...) or waits for or times the GPU itself (torch.cuda.synchronize,
torch.cuda.Event), except on a line whose comment says why (`# own clock: <why>`) and the one HTTP reply the
serving workloads time themselves (their engineer's code: it waits for a server, not a device)."""

from __future__ import annotations

import ast
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time"}
TORCH_TIMING = {"synchronize", "Event"}  # as torch.cuda.<name>
WAIVER = "# own clock:"
TIMED_ELSEWHERE = {("serving_common.py", "first_chat_reply")}  # (file, function): the serving workloads' own


def offending(source: str, name: str = "<snippet>") -> list[str]:
    """`file:line: what` for each clock read or torch timing call outside Timed in `source`."""
    tree = ast.parse(source)
    lines = source.splitlines()
    time_names = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                  for alias in node.names if alias.name == "time"}
    found = []

    def report(node, what: str, function: str | None) -> None:
        line = lines[node.lineno - 1]
        waived = WAIVER in line and line.split(WAIVER, 1)[1].strip()
        if not waived and (Path(name).name, function) not in TIMED_ELSEWHERE:
            found.append(f"{name}:{node.lineno}: {what}")

    def visit(node, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            for alias in node.names:
                if alias.name in CLOCKS:
                    report(node, f"from time import {alias.name}", function)
        if isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in time_names and node.attr in CLOCKS:
                report(node, f"time.{node.attr}", function)
            if isinstance(owner, ast.Attribute) and owner.attr == "cuda" and node.attr in TORCH_TIMING:
                report(node, f"cuda.{node.attr}", function)
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def test_the_check_finds_a_workloads_own_clock_and_lets_a_reasoned_one_pass():
    source = "\n".join([
        "import time",
        "import torch",
        "from time import perf_counter",
        "def run():",
        "    t0 = time.perf_counter()",
        "    wait = torch.cuda.synchronize",
        "    start = torch.cuda.Event(enable_timing=True)",
        "    stamp = time.time()  # own clock: a wall-clock stamp for the log, not a measurement",
        "    bare = time.time()  # own clock:",
        "def first_chat_reply():",
        "    return time.perf_counter()",
    ])
    assert offending(source, "w.py") == [
        "w.py:3: from time import perf_counter", "w.py:5: time.perf_counter", "w.py:6: cuda.synchronize",
        "w.py:7: cuda.Event", "w.py:9: time.time", "w.py:11: time.perf_counter"]  # a waiver needs its reason
    assert offending(source, "serving_common.py")[-1] == "serving_common.py:9: time.time"  # its one reply only


def test_no_workload_times_itself():
    modules = sorted(WORKLOADS.rglob("*.py"))
    assert len(modules) > 20  # the catalog's workloads, not an empty folder
    found = [hit for path in modules for hit in offending(path.read_text(), str(path.relative_to(WORKLOADS)))]
    assert found == [], "time these through gpubench.measure.timing.Timed, or say why not (# own clock: why):\n" + \
        "\n".join(found)
