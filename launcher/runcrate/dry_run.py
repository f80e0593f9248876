"""What `--dry-run` prints of a Runcrate plan: the instance types with their prices, each run's expected and
worst-case cost; for a sweep, its matrix of cells with the same figures."""

from __future__ import annotations

from ..show import _console


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


def print_matrix(plan, sweep_id: str, url: str, cells: list, spent: float,
                 offline: bool = False) -> None:
    from rich.table import Table

    console = _console()
    console.print(f"sweep         {sweep_id} (plan {plan.source})", markup=False)
    console.print(f"store         {url}/", markup=False)
    nets = {c.cell.workload: c.launch.max_runtime_minutes for c in cells}
    console.print("safety net    " + ", ".join(f"{w} {m} min" for w, m in nets.items()) + " (each job's max runtime)",
                  markup=False)
    commands: dict[str, int] = {}
    for c in cells:  # one line per workload and arguments, numbered; the table refers to it
        if c.launch.command not in commands:
            commands[c.launch.command] = len(commands) + 1
            console.print(f"{f'[{commands[c.launch.command]}]':14}{c.launch.command}", markup=False)
    table = Table(title="cells (one job each)")
    for column in ("", "workload", "GPU", "state", "$/h", "exp. $", "max $"):
        table.add_column(column, justify="right" if "$" in column else "left", overflow="fold")
    expected_total = worst_total = 0.0
    for c in cells:
        run = c.run
        expected, worst = c.launch.expected_cost(run), c.launch.worst_cost(run)
        if c.to_launch:
            expected_total += expected or 0.0
            worst_total += worst or 0.0
        price = run.candidates[0].price
        table.add_row(f"[{commands[c.launch.command]}]", c.cell.workload, run.candidates[0].wire, c.state,
                      "-" if price is None else f"{price:.2f}", "-" if expected is None else f"{expected:.2f}",
                      "-" if worst is None else f"{worst:.2f}")
    console.print(table)
    launching = sum(c.to_launch for c in cells)
    costs = "costs unknown" if offline else f"expected ${expected_total:.2f}, at most ${worst_total:.2f}" + (
        f", plus ${spent:.2f} spent by stored runs" if spent else "")
    console.print(f"to launch     {launching} of {len(cells)} cells: {costs}; max_usd ${plan.max_usd:g}", markup=False)
    console.print("exp. $        expected minutes of the run (smoke for --smoke), cheapest region",
                  markup=False)
    console.print("max $         the safety net at the dearest region: what max_usd must cover", markup=False)
    if offline:
        console.print("no RUNCRATE_API_KEY: the plan is valid, but its GPU names, prices and cap were not checked"
                      " against /instances/types", markup=False)
    console.print("dry run: nothing was launched", markup=False)
