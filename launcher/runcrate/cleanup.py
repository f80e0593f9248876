"""`gpubench-launch cleanup`: stop gpubench jobs and instances that are still live with no
launcher attached (the launcher crashed or was killed), and drop their SSH keys.

Attached = the launcher named in the run's state file (or, without one, in the job's
gpubench_launcher tag) is a live process of this host. A run launched from another host is left
alone unless --all is given: this host cannot tell whether its launcher still watches it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .. import errors
from ..errors import LaunchError
from ..redact import Redactor
from ..state import all_states, launcher_alive
from .client import api_errors, describe, make_client
from .lookup import GONE_INSTANCE, LIVE_JOB, run_id_of_name


@dataclass
class Found:
    kind: str  # job | instance | ssh key
    id: str
    run_id: str | None
    status: str
    attached: bool | None  # None: launched elsewhere
    thing: object = None
    action: str = ""


def attachment(state: dict | None, tag: str | None) -> bool | None:
    if state is not None and state.get("launcher"):
        return launcher_alive(state["launcher"])
    if tag:
        return launcher_alive(tag)
    return None


async def survey(client, states: dict[str, dict]) -> list[Found]:
    found: list[Found] = []
    async for job in client.jobs.list_all(status=list(LIVE_JOB), tags={"gpubench": "1"}):
        if job.status not in LIVE_JOB or job.tags.get("gpubench") != "1":
            continue
        run_id = job.tags.get("gpubench_run_id")
        found.append(Found("job", job.id, run_id, job.status,
                           attachment(states.get(run_id), job.tags.get("gpubench_launcher")), job))
    for inst in await client.instances.list(search="gpubench-"):
        run_id = run_id_of_name(inst.name)
        if run_id is None or inst.status in GONE_INSTANCE:
            continue
        found.append(Found("instance", inst.id, run_id, inst.status, attachment(states.get(run_id), None), inst))
    for key in await client.ssh_keys.list():
        run_id = run_id_of_name(key.name)
        if run_id is None:
            continue
        found.append(Found("ssh key", key.id, run_id, "registered", attachment(states.get(run_id), None), key))
    return found


async def cleanup(provider: str, all_hosts: bool, dry_run: bool) -> int:
    """`provider`: the registry's name of Runcrate; state files of other providers' runs are theirs to read."""
    from ..pace import Pace
    from .stopping import cancel_job, terminate_instance

    redact = Redactor()
    pace = Pace.from_env()
    states = {s["run_id"]: s for s in all_states() if "run_id" in s and s.get("provider", provider) == provider}
    client = make_client()
    code = errors.OK
    try:
        try:
            found = await survey(client, states)
        except api_errors() as exc:
            raise LaunchError(f"cannot list gpubench jobs and instances: {describe(exc, redact)}") from None
        gap = min(2.0, pace.poll_s)
        for f in found:
            if f.attached:
                f.action = "left alone: its launcher is running"
                continue
            if f.attached is None and not all_hosts:
                f.action = "left alone: launched from another host (use --all)"
                continue
            if dry_run:
                f.action = "would stop" if f.kind != "ssh key" else "would delete"
                continue
            if f.kind == "job":
                job = await cancel_job(client, f.id, pace.confirm_timeout_s, gap)
                ok = job is not None and job.finished
                f.action = f"cancelled ({job.status})" if ok else "NOT confirmed stopped"
            elif f.kind == "instance":
                ok = await terminate_instance(client, f.thing, pace.confirm_timeout_s, gap)
                f.action = "terminated" if ok else "NOT confirmed terminated"
            else:
                try:
                    await client.ssh_keys.delete(f.id)
                    ok, f.action = True, "deleted"
                except api_errors() as exc:
                    ok, f.action = False, f"not deleted: {describe(exc, redact)}"
            if not ok:
                code = errors.LAUNCHER_TROUBLE
    finally:
        await client.close()
    if not dry_run:
        _forget_finished(states, found)
    _report(found)
    return code


def _forget_finished(states: dict[str, dict], found: list[Found]) -> None:
    """Drop state files of dead launchers whose runs hold nothing live any more."""
    still = {f.run_id for f in found if not f.action.startswith(("cancelled", "terminated", "deleted"))}
    for run_id, state in states.items():
        if run_id not in still and launcher_alive(state.get("launcher", "")) is not True:
            Path(state["_path"]).unlink(missing_ok=True)


def _report(found: list[Found]) -> None:
    out = sys.stdout
    if not found:
        out.write("gpubench-launch cleanup: no gpubench job, instance or SSH key is live\n")
        return
    for f in found:
        out.write(f"{f.kind:9} {f.id:32} run {f.run_id or '-':48} {f.status:10} {f.action}\n")
