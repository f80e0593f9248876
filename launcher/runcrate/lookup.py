"""Find a run's job or instance from its run id: jobs carry the tag gpubench_run_id, instances the
name gpubench-<run-id>."""

from __future__ import annotations

LIVE_JOB = ("queued", "starting", "running")
GONE_INSTANCE = ("terminated", "failed", "stopped", "deleted", "error")


def run_id_of_name(name: str | None) -> str | None:
    return name[len("gpubench-"):] if name and name.startswith("gpubench-") else None


async def find_job(client, run_id: str):
    page = await client.jobs.list(tags={"gpubench_run_id": run_id}, limit=100)
    jobs = [j for j in page if j.tags.get("gpubench_run_id") == run_id]
    return jobs[0] if jobs else None


async def find_instance(client, run_id: str):
    name = f"gpubench-{run_id}"
    found = [i for i in await client.instances.list(search=name) if i.name == name]
    found.sort(key=lambda i: i.status in GONE_INSTANCE)  # a live one first
    return found[0] if found else None


async def find_run(client, run_id: str):
    """('job', Job) or ('instance', Instance) or (None, None)."""
    job = await find_job(client, run_id)
    if job is not None:
        return "job", job
    instance = await find_instance(client, run_id)
    if instance is not None:
        return "instance", instance
    return None, None
