"""Prices by region: the worst case assumes the dearest region a job may land in (the fake offers L40S at
$0.86/h in us-east-1 and $0.89/h in eu-west-1), --region narrows the rows, costs are corrected to the rate
of the instance obtained, and the dry-run tables fit an 80-column terminal."""

from __future__ import annotations

import asyncio

import test_launch_support as support
from terminal import on_terminal
from test_launch_support import launch

from gpubench.catalog import WORKLOADS
from gpubench.launcher.plan import LaunchPlan, new_runs
from gpubench.launcher.redact import Redactor
from gpubench.launcher.runcrate.client import make_client
from gpubench.launcher.runcrate.types import fetch_types, resolve_gpu

fake, launcher_env = support.fake, support.launcher_env


def test_at_most_uses_the_dearest_region(fake, launcher_env, capsys):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--dry-run")
    assert result.code == 0, result.stderr
    # expected: 8 min at the cheapest $0.86/h = 0.115; at most: 31 min at the dearest $0.89/h = 0.460 (not 0.444)
    assert "0.115" in result.stdout and "0.460" in result.stdout and "0.444" not in result.stdout


def test_region_narrows_the_rows_and_the_prices(fake, launcher_env, capsys):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--region", "eu-west", "--dry-run")
    assert result.code == 0, result.stderr
    assert "calm-lovelace-l40s-eu-7a8b" in result.stdout and "calm-lovelace-l40s-5e6f" not in result.stdout
    assert "0.119" in result.stdout  # 8 min at $0.89/h
    refused = launch(capsys, "train-compile", "--gpu", "L40S", "--region", "ap-south", "--dry-run")
    assert refused.code == 2 and "regions offering it: eu-west-1, us-east-1" in refused.stderr


def test_costs_are_corrected_to_the_obtained_region(fake, launcher_env):
    async def plan():
        client = make_client()
        try:
            types = await fetch_types(client, Redactor())
            return [await resolve_gpu(client, "L40S", types, 1)]
        finally:
            await client.close()

    spec = WORKLOADS.get("train-compile")
    gpus = asyncio.run(plan())
    launch_plan = LaunchPlan(workload=spec, setups=None, smoke=False, repeats=None, via="job", image="i", command="c",
                             max_runtime_minutes=31, runs=new_runs(spec, gpus, False))
    [run] = launch_plan.runs
    assert launch_plan.env_for(run)["GPUBENCH_PRICE_USD_PER_HOUR"] == "0.86"  # the cheapest region, corrected later
    dear = launch_plan.pricing(run, "L40S", "eu-west-1")
    assert dear["priced_at_usd_per_hour"] == 0.86 and dear["obtained_usd_per_hour"] == 0.89
    assert abs(dear["factor"] - 0.89 / 0.86) < 1e-6 and "multiply them by" in dear["note"]
    assert launch_plan.pricing(run, "L40S", "us-east-1")["factor"] == 1


def test_dry_run_fits_an_80_column_terminal(fake, launcher_env, tmp_path):
    code, screen = on_terminal("gpubench-launch", "sdxl", "--gpu", "L40S", "--gpu", "A100-80GB:2", "--gpu",
                               "RTX5090", "--each", "--dry-run", cwd=tmp_path, env={**launcher_env, "COLUMNS": "80"})
    assert code == 0, screen
    assert "nothing was launched" in screen
    table_lines = [line for line in screen.splitlines() if line[:1] in "┃│┏┡└━┗╇┣┳"]
    assert table_lines and max(len(line) for line in table_lines) <= 80, screen
    assert "sdxl-" in screen and "…" not in screen  # run ids shown whole


def test_gpus_lists_the_api_types_with_their_prices(fake, launcher_env, capsys):
    result = launch(capsys, "gpus")
    assert result.code == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "calm-lovelace-l40s-5e6f" in line)
    assert "L40S" in row and "0.86" in row
