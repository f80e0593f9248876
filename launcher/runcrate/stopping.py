"""Stop a machine and confirm it stopped: a job cancelled (status read back), an instance
terminated (the instance list no longer shows it live)."""

from __future__ import annotations

import asyncio
import time

from .client import api_errors
from .lookup import GONE_INSTANCE


async def cancel_job(client, job_id: str, timeout_s: float, gap_s: float):
    """Cancel, then read the job back until it shows as ended: the job as last read (finished once
    confirmed). The cancel's own answer is not taken as the confirmation; a status read is."""
    from runcrate import ConflictError

    deadline = time.monotonic() + timeout_s
    job, cancelled = None, False
    while True:
        try:
            if not cancelled:
                await client.jobs.cancel(job_id)
                cancelled = True
            job = await client.jobs.get(job_id)
        except ConflictError:
            cancelled = True  # it ended another way; the read says how
            continue
        except api_errors():
            pass
        if (job is not None and job.finished) or time.monotonic() > deadline:
            return job
        await asyncio.sleep(gap_s)


async def terminate_instance(client, instance, timeout_s: float, gap_s: float) -> bool:
    from runcrate import NotFoundError

    try:
        await client.instances.terminate(instance.id)
    except NotFoundError:
        return True
    except api_errors():
        pass
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            listed = await client.instances.list(search=instance.name)
        except api_errors():
            listed = None
        if listed is not None and not any(i.id == instance.id and i.status not in GONE_INSTANCE for i in listed):
            return True
        await asyncio.sleep(gap_s)
    return False
