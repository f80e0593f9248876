"""Plain tables on stdout: the dry-run plan and the GPU types on offer."""

from __future__ import annotations


def _console():
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=100, highlight=False)


def print_plan(plan) -> None:
    from rich.table import Table

    console = _console()

    def line(text: str) -> None:  # one line, never cut: a path or a command stays whole, to copy
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    spec = plan.workload
    line(f"workload      {spec.name}: {spec.title}")
    line(f"setups        {', '.join(plan.setups or spec.setups)}{'  (smoke)' if plan.smoke else ''}")
    line(f"via           {plan.via}" + (f" ({plan.deployment} instances)" if plan.deployment else ""))
    line(f"image         {plan.image}")
    line(f"command       {plan.command}")
    line(f"max runtime   {plan.max_runtime_minutes} min per attempt (safety net)")
    if plan.max_cost is not None or plan.max_minutes is not None:
        limits = []
        if plan.max_cost is not None:
            limits.append(f"cancel at ${plan.max_cost:g}")
        if plan.max_minutes is not None:
            limits.append(f"cancel after {plan.max_minutes:g} min")
        line(f"limits        {', '.join(limits)}")
    line(f"store         {plan.store_url or plan.results_dir + '/<run-id>/'}")
    if plan.price_override is not None:
        line(f"price         ${plan.price_override:g}/h (--price) for cost metrics and estimates")

    # Narrow enough for an 80-column terminal: run ids and env names are printed once, outside the tables.
    types = Table(title="instance types (/instances/types), cheapest first")
    for column in ("GPU", "instance type", "region", "kind", "$/hour"):
        types.add_column(column, justify="right" if column == "$/hour" else "left", overflow="fold")
    seen = set()
    for run in plan.runs:
        for choice in run.candidates:
            for row in choice.rows:
                if row.id not in seen:
                    seen.add(row.id)
                    types.add_row(choice.requested, row.id, row.region,
                                  row.deployment_type or "-", f"{row.hourly_rate:.2f}")
    console.print(types)

    costs = Table(title="expected duration and cost")
    for column in ("run", "GPU candidates", "min", "expected $", "at most $"):
        costs.add_column(column, justify="left" if column in ("run", "GPU candidates") else "right", overflow="fold")
    for run in plan.runs:
        expected = plan.expected_cost(run)
        worst = plan.worst_cost(run)
        costs.add_row(run.run_id, run.label, f"{spec.expected(plan.smoke):g}" + (" (smoke)" if plan.smoke else ""),
                      "-" if expected is None else f"{expected:.3f}", "-" if worst is None else f"{worst:.3f}")
    console.print(costs)
    console.print("expected $: the expected minutes at the first GPU's cheapest region"
                  f"{' (--price)' if plan.price_override is not None else ''}; at most $: the"
                  f" {plan.max_runtime_minutes} min safety net at the dearest region of any candidate", markup=False)
    env_names = sorted({name for run in plan.runs for name in run.env})
    line(f"job env       {' '.join(env_names)} (names only)")
    line("dry run: nothing was launched")


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
