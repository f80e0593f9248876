"""What `--dry-run` prints of runs on Docker hosts: each run's host, GPUs, image and container command; for a sweep, its
matrix of cells with each one's safety net in GPU-hours. No engine is asked."""

from __future__ import annotations

import shlex

from ..show import _console
from .container import entrypoint


def describe(plan, run, store) -> list[str]:
    gpu = plan.settings.gpu(run.candidates[0].requested)
    entry, command = entrypoint(plan)
    gpus = gpu.gpus(run.candidates[0].count, True)
    return [f"  host   {gpu.host}",
            f"  gpus   {gpus or 'none (its CPU)'}" + ("; its CPU if the host has no GPU runtime (--smoke)"
                                                       if gpus and plan.smoke else ""),
            f"  runs   {shlex.join([*entry, *command])}",
            f"  in     {plan.image}, /cache on volume {plan.settings.cache_volume}, results streamed to"
            f" {plan.results_dir}/{run.run_id}/" + (f" and {store.url}/{run.run_id}/" if store else "")]


def print_plan(plan, store, note: str | None) -> None:
    console = _console()

    def line(text: str) -> None:  # one line, never cut: a path or a command stays whole, to copy
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    line(f"workload      {plan.workload.name} ({plan.workload.title})")
    line("where         Docker hosts: the workload's pinned image as a container, one at a time per host")
    line(f"command       {plan.command}")
    line(f"max runtime   {plan.max_runtime_minutes} min (the container's safety net)")
    for run in plan.runs:
        line(f"{run.run_id} on {run.candidates[0].requested}:")
        for text in describe(plan, run, store):
            line(text)
    line(f"job env       {' '.join(sorted({name for run in plan.runs for name in run.env}))} (names only)")
    if note:
        line(note)
    line("dry run: nothing was started")


def print_sweep(plan, sweep_id: str, url: str, cells: list, provider, spent: float, note: str | None) -> None:
    from rich.table import Table

    console = _console()
    console.print(f"sweep         {sweep_id} (plan {plan.source})", markup=False)
    console.print(f"store         {url}/", markup=False)
    console.print("where         Docker hosts: one container at a time per host", markup=False)
    table = Table(title="cells (one container each)")
    for column in ("workload", "GPU", "host", "state", "max min", "GPU-h max"):
        table.add_column(column, overflow="fold")
    worst = 0.0
    for c in cells:
        gpu = c.launch.settings.gpu(c.run.candidates[0].requested)
        hours = provider.worst_case(c.launch, c.run)
        table.add_row(c.cell.workload, c.run.candidates[0].wire, gpu.host, c.state, str(c.launch.max_runtime_minutes),
                      f"{hours:.2f}")
        if c.to_launch:
            worst += hours
    console.print(table)
    for c in cells:
        if c.to_launch:
            console.print(f"{c.cell.label} on {c.run.candidates[0].requested}:", markup=False)
            for text in describe(c.launch, c.run, None):
                console.print(text, markup=False, soft_wrap=True)
    cap = f"; max_gpu_hours {provider.limit:g}" if provider.limit is not None else ""
    used = f", plus {spent:.2f} used by stored runs" if spent else ""
    console.print(f"to start      {sum(c.to_launch for c in cells)} of {len(cells)} cells: at most {worst:.2f}"
                  f" GPU-hours{used}{cap}", markup=False)
    if note:
        console.print(note, markup=False)
    console.print("dry run: nothing was started", markup=False)
