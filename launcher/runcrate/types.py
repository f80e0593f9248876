"""Runcrate's GPU types (GET /instances/types): a --gpu name as Runcrate spells it, with its rows (regions,
deployment types, hourly rates: the prices come from this answer, never from code), and `gpubench-launch gpus`."""

from __future__ import annotations

import asyncio
from typing import Any

from gpubench.registry import UnknownName

from ..errors import LaunchError
from ..plan import GpuChoice, norm_gpu, split_count
from ..redact import Redactor
from .client import api_errors, describe, make_client


async def fetch_types(client, redact: Redactor) -> list:
    try:
        return await client.instances.list_types()
    except api_errors() as exc:
        raise LaunchError(f"cannot read /instances/types: {describe(exc, redact)}") from None


def instance_types() -> list:
    """The API's instance types (prices among them), read once with the key from the environment."""
    async def read():
        client = make_client()
        try:
            return await fetch_types(client, Redactor())
        finally:
            await client.close()

    return asyncio.run(read())


def match_gpu_name(name: str, types: list[Any]) -> str | None:
    names = sorted({t.gpu_type for t in types})
    if name in names:
        return name
    close = [n for n in names if norm_gpu(n) == norm_gpu(name)]
    return close[0] if len(close) == 1 else None


def region_matches(wanted: str | None, region: str | None) -> bool:
    """--region takes a region id or the start of one (us-east)."""
    return not wanted or (region or "").lower().startswith(wanted.strip().lower())


async def resolve_gpu(
    client, requested: str, types: list[Any], default_count: int, deployment: str | None = None,
    region: str | None = None,
) -> GpuChoice:
    """A --gpu value as Runcrate spells it, with its rows; unknown names fail listing the valid ones."""
    name, count = split_count(requested, default_count)
    gpu_type = match_gpu_name(name, types)
    if gpu_type is None:
        # The API may know other spellings (h100-sxm for H100): ask it before giving up.
        try:
            rows = await client.instances.list_types(gpu_type=name)
        except api_errors():
            rows = []
        known = {t.gpu_type for t in types}
        aliases = {t.gpu_type for t in rows if t.gpu_type in known}
        if len(aliases) == 1:
            gpu_type = aliases.pop()
    if gpu_type is None:
        raise LaunchError(str(UnknownName("GPU", name, sorted({t.gpu_type for t in types}))))
    rows = [t for t in types if t.gpu_type == gpu_type]
    if deployment:
        wanted = [t for t in rows if (t.deployment_type or "") == deployment]
        if not wanted:
            offered = sorted({t.gpu_type for t in types if (t.deployment_type or "") == deployment})
            listed = ", ".join(offered) or "none"
            raise LaunchError(f"no {deployment}-type {gpu_type} in /instances/types; {deployment} types: {listed}")
        rows = wanted
    if region:
        here = [t for t in rows if region_matches(region, t.region)]
        if not here:
            offered = ", ".join(sorted({t.region for t in rows})) or "none"
            raise LaunchError(f"no {gpu_type} in region {region!r}; regions offering it: {offered}")
        rows = here
    exact = sorted((t for t in rows if t.gpu_count == count), key=lambda t: t.hourly_rate)
    if not exact:
        counts = ", ".join(str(c) for c in sorted({t.gpu_count for t in rows}))
        raise LaunchError(f"no {gpu_type} with {count} GPU(s) in /instances/types; counts offered: {counts}")
    return GpuChoice(requested=requested, gpu_type=gpu_type, count=count, rows=tuple(exact))



def print_types(types: list, deployment: str | None = None) -> None:
    from rich.table import Table

    from ..show import _console

    console = _console()
    table = Table(title="GPU types on offer (GET /instances/types)")
    for column in ("GPU", "GPUs", "region", "deployment", "$/hour", "instance type"):
        table.add_column(column)
    rows = [t for t in types if deployment is None or t.deployment_type == deployment]
    for t in sorted(rows, key=lambda t: (t.gpu_type, t.gpu_count, t.hourly_rate)):
        table.add_row(t.gpu_type, str(t.gpu_count), t.region, t.deployment_type or "-", f"{t.hourly_rate:.2f}", t.id)
    console.print(table)
