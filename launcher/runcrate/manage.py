"""`status`, `logs` and `cancel` for a run id (any launcher's run: looked up through the API by its tag or name).
Each answers None when the API knows no job or instance of that run (another provider may)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from .. import errors
from ..errors import LaunchError
from ..redact import Redactor
from .client import api_errors, describe, make_client
from .follow import LostContact
from .lookup import find_run

NOT_FOUND = "no gpubench job or instance for run id {run_id!r}"


async def _find(client, run_id: str, redact: Redactor):
    try:
        return await find_run(client, run_id)
    except api_errors() as exc:
        raise LaunchError(f"cannot look up run {run_id}: {describe(exc, redact)}") from None


async def status(run_id: str, results_dir: str) -> int | None:
    redact = Redactor()
    client = make_client()
    try:
        kind, thing = await _find(client, run_id, redact)
        if kind is None:
            return None
        recovered = None
        if kind == "job":  # a launcher that died leaves the end of the records to the job's artifacts
            from .artifacts import resume_folder

            recovered = await resume_folder(client, thing, run_id, results_dir, redact)
    finally:
        await client.close()
    out = sys.stdout
    out.write(f"run        {run_id}\n")
    if kind == "job":
        job = thing
        from .jobs import job_region

        out.write(f"job        {job.id}\nstatus     {job.status}\n")
        out.write(f"gpu        {job.gpu_type}:{job.gpu_count}  candidates "
                  f"{', '.join(c.gpu_type for c in job.gpu_candidates) or '-'}\n")
        out.write(f"region     {job_region(job) or '-'}\ncost_usd   {job.cost_usd}\n")
        out.write(f"created    {job.created_at}\nstarted    {job.started_at}\nended      {job.ended_at}\n")
        if job.exit_code is not None or job.error:
            out.write(f"exit_code  {job.exit_code}\nerror      {job.error or '-'}\n")
    else:
        inst = thing
        out.write(f"instance   {inst.id}\nstatus     {inst.status}\n")
        out.write(f"gpu        {inst.gpu_type}:{inst.gpu_count}\nregion     {inst.region or '-'}\n")
        out.write(f"ip         {inst.ip or '-'}\n$/hour     {inst.cost_per_hour}\n")
    folder = Path(results_dir) / run_id
    out.write(f"local      {folder if folder.is_dir() else '-'}\n")
    if recovered:
        out.write(f"records    {recovered}\n")
    return errors.OK


async def logs(run_id: str, follow: bool, results_dir: str) -> int | None:
    redact = Redactor()
    client = make_client()
    try:
        kind, thing = await _find(client, run_id, redact)
        if kind is None:
            return None
        if kind != "job":
            local = Path(results_dir) / run_id / "run.log"
            raise LaunchError(f"run {run_id} ran on an instance; its output is in {local} and results.jsonl")
        from ..pace import Pace
        from .follow import LogFollower

        def emit(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        try:
            pace = Pace.from_env()
            if not follow:  # a one-shot read gives up sooner than a launcher watching a run
                pace = dataclasses.replace(pace, lost_after_s=min(pace.lost_after_s, 30.0))
            follower = LogFollower(client, thing.id, emit, pace, redact, follow=follow)
            await follower.run()
        except LostContact as exc:
            raise LaunchError(f"cannot read the logs of job {thing.id}: {exc}") from None
        if follower.done and (Path(results_dir) / run_id).is_dir():  # a launcher died: complete its folder
            from .artifacts import resume_folder

            job = await client.jobs.get(thing.id)
            recovered = await resume_folder(client, job, run_id, results_dir, redact)
            if recovered:
                sys.stderr.write(f"gpubench-launch: {recovered}\n")
        return errors.OK
    finally:
        await client.close()


async def cancel(run_id: str) -> int | None:
    from ..pace import Pace
    from .stopping import cancel_job, terminate_instance

    redact = Redactor()
    pace = Pace.from_env()
    client = make_client()
    try:
        kind, thing = await _find(client, run_id, redact)
        if kind is None:
            return None
        if kind == "job":
            if thing.finished:
                sys.stderr.write(f"gpubench-launch: job {thing.id} already {thing.status}\n")
                return errors.OK
            job = await cancel_job(client, thing.id, pace.confirm_timeout_s, min(2.0, pace.poll_s))
            if job is not None and job.finished:
                sys.stderr.write(f"gpubench-launch: job {thing.id} {job.status} (cost ${job.cost_usd or 0:.4f})\n")
                return errors.OK
            sys.stderr.write(f"gpubench-launch: job {thing.id} not confirmed stopped\n")
            return errors.LAUNCHER_TROUBLE
        if await terminate_instance(client, thing, pace.confirm_timeout_s, min(2.0, pace.poll_s)):
            sys.stderr.write(f"gpubench-launch: instance {thing.id} terminated\n")
            return errors.OK
        sys.stderr.write(f"gpubench-launch: instance {thing.id} still listed\n")
        return errors.LAUNCHER_TROUBLE
    finally:
        await client.close()
