"""Plain tables on stdout: the dry-run plan and the GPU types on offer."""

from __future__ import annotations


def _console():
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=200, highlight=False)


def print_plan(plan) -> None:
    from rich.table import Table

    console = _console()
    spec = plan.workload
    console.print(f"workload      {spec.name}: {spec.title}", markup=False)
    console.print(f"setups        {', '.join(plan.setups or spec.setups)}{'  (smoke)' if plan.smoke else ''}",
                  markup=False)
    console.print(f"via           {plan.via}" + (f" ({plan.deployment} instances)" if plan.deployment else ""),
                  markup=False)
    console.print(f"image         {plan.image}", markup=False)
    console.print(f"command       {plan.command}", markup=False)
    console.print(f"max runtime   {plan.max_runtime_minutes} min per attempt (safety net)", markup=False)
    if plan.max_cost is not None or plan.max_minutes is not None:
        limits = []
        if plan.max_cost is not None:
            limits.append(f"cancel at ${plan.max_cost:g}")
        if plan.max_minutes is not None:
            limits.append(f"cancel after {plan.max_minutes:g} min")
        console.print(f"limits        {', '.join(limits)}", markup=False)
    console.print(f"store         {plan.store_url or plan.results_dir + '/<run-id>/'}", markup=False)

    types = Table(title="instance types (from /instances/types, cheapest first)")
    for column in ("run", "GPU", "instance type", "GPUs", "region", "deployment", "$/hour"):
        types.add_column(column)
    for run in plan.runs:
        for choice in run.candidates:
            for row in choice.rows:
                types.add_row(run.run_id, choice.requested, row.id, str(row.gpu_count), row.region,
                              row.deployment_type or "-", f"{row.hourly_rate:.2f}")
    console.print(types)

    costs = Table(title="expected duration and cost")
    for column in ("run", "GPU candidates", "expected min", "expected $", "at most $ (max runtime)", "env"):
        costs.add_column(column, overflow="fold")
    for run in plan.runs:
        expected = plan.expected_cost(run)
        worst = plan.worst_cost(run)
        costs.add_row(run.run_id, run.label, f"{spec.expected_minutes:g}" + (" (full run)" if plan.smoke else ""),
                      "-" if expected is None else f"{expected:.3f}", "-" if worst is None else f"{worst:.3f}",
                      " ".join(sorted(run.env)))
    console.print(costs)
    console.print("dry run: nothing was launched", markup=False)


def print_types(types: list, deployment: str | None = None) -> None:
    from rich.table import Table

    console = _console()
    table = Table(title="GPU types on offer (GET /instances/types)")
    for column in ("GPU", "GPUs", "region", "deployment", "$/hour", "instance type"):
        table.add_column(column)
    rows = [t for t in types if deployment is None or t.deployment_type == deployment]
    for t in sorted(rows, key=lambda t: (t.gpu_type, t.gpu_count, t.hourly_rate)):
        table.add_row(t.gpu_type, str(t.gpu_count), t.region, t.deployment_type or "-", f"{t.hourly_rate:.2f}", t.id)
    console.print(table)
