"""What the labels of the launcher's containers find again: a sweep's containers that an earlier call left (to follow
instead of starting again), and `status`, `logs`, `cancel` and `cleanup` by run id. A run whose container is gone
(removed by its launcher once its results were read) is answered from its run folder's job.json."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

from gpubench.run import docker_run

from .. import errors
from ..errors import LaunchError
from ..provider import Left
from ..redact import Redactor
from ..results import find_run_folder
from .container import LABEL, containers


def _clients(hosts: list[str]):
    """(host, client) for each host that answers; a host that does not is said on stderr (all silent: LaunchError)."""
    failed = []
    for host in hosts:
        try:
            client = docker_run.connect(30, host)
        except docker_run.DockerUnavailable as exc:
            failed.append(exc.reason)
            continue
        try:
            yield host, client
        finally:
            client.close()
    if failed and len(failed) == len(hosts):
        raise LaunchError(failed[0])
    for reason in failed:
        sys.stderr.write(f"gpubench-launch: {reason}\n")


def _find(hosts: list[str], run_id: str):
    """(host, client, container) of the run's newest container, or None; the client stays open for the caller."""
    for host in hosts:
        try:
            client = docker_run.connect(30, host)
        except docker_run.DockerUnavailable as exc:
            if len(hosts) == 1:
                raise LaunchError(exc.reason) from None
            sys.stderr.write(f"gpubench-launch: {exc.reason}\n")
            continue
        found = sorted(containers(client, run_id=run_id), key=lambda c: c.attrs.get("Created", ""))
        if found:
            return host, client, found[-1]
        client.close()
    return None


def left_behind(config, sweep_id: str, stored: set[str], cells: dict) -> dict[str, Left]:
    """Per pending cell (path -> its plan), the newest container of this sweep on the cell's host whose run is not
    stored: one still running, or one that exited 0 (its output is read again); one that failed or was stopped is
    started again."""
    chosen: dict[str, Left] = {}
    for host, client in _clients(config.hosts):
        for container in containers(client, sweep=sweep_id):
            labels = container.labels
            path, run_id = labels.get(f"{LABEL}.cell", ""), labels.get(f"{LABEL}.run-id", "")
            if path not in cells or not run_id or run_id in stored:
                continue
            plan = cells[path]
            if plan.settings.gpu(plan.runs[0].candidates[0].requested).host != host:
                continue
            state = container.attrs.get("State", {})
            if not (container.status == "running" or (container.status == "exited" and state.get("ExitCode") == 0)):
                continue
            known = chosen.get(path)
            if known is None or container.attrs.get("Created", "") > known.job.attrs.get("Created", ""):
                chosen[path] = Left(run_id, container,
                                    f"container {container.short_id} ({container.status}) on {host} from an earlier"
                                    " call")
    return chosen


def status(hosts: list[str], run_id: str, results_dir: str) -> int | None:
    found = _find(hosts, run_id)
    out = sys.stdout
    if found is None:
        return _from_folder(results_dir, run_id)
    host, client, container = found
    try:
        state = container.attrs.get("State", {})
        out.write(f"run        {run_id}\n")
        out.write(f"container  {container.short_id} ({container.name}) on {host}\n")
        out.write(f"status     {container.status}\n")
        out.write(f"image      {container.attrs.get('Config', {}).get('Image', '-')}\n")
        out.write(f"started    {state.get('StartedAt', '-')}\n")
        if container.status != "running":
            out.write(f"ended      {state.get('FinishedAt', '-')}\nexit_code  {state.get('ExitCode')}\n")
        folder = find_run_folder(results_dir, run_id)
        out.write(f"local      {folder or '-'}\n")
    finally:
        client.close()
    return errors.OK


def _from_folder(results_dir: str, run_id: str) -> int | None:
    """A run whose container is gone: what its job.json says."""
    folder = find_run_folder(results_dir, run_id)
    try:
        facts = json.loads((folder / "job.json").read_text()) if folder else None
    except (OSError, ValueError):
        facts = None
    if not facts:
        return None
    out = sys.stdout
    out.write(f"run        {run_id}\n")
    out.write(f"container  {str(facts.get('job_id') or '-')[:12]} on {facts.get('host', '-')} (removed)\n")
    out.write(f"status     {facts.get('status')}\nexit_code  {facts.get('exit_code')}\n")
    out.write(f"started    {facts.get('started_at')}\nended      {facts.get('ended_at')}\n")
    out.write(f"gpu_hours  {facts.get('gpu_hours')}\nlocal      {folder}\n")
    return errors.OK


def logs(hosts: list[str], run_id: str, follow: bool, results_dir: str) -> int | None:
    found = _find(hosts, run_id)
    if found is None:
        folder = find_run_folder(results_dir, run_id)
        if folder is None or not (folder / "job.json").is_file():
            return None
        raise LaunchError(f"run {run_id}: its container is gone; its output is in {folder} (run.log, results.jsonl)")
    host, client, container = found
    redact = Redactor()

    def emit(line: str) -> None:
        sys.stdout.write(redact(line) + "\n")
        sys.stdout.flush()

    try:
        chunks = client.api.logs(container.id, stdout=True, stderr=True, stream=True, follow=follow)
        docker_run.pump(((chunk, None) for chunk in chunks), emit, emit)
    finally:
        client.close()
    return errors.OK


async def cancel(hosts: list[str], run_id: str) -> int | None:
    """SIGINT (the run stores what it measured), then a stop; confirmed when the engine shows it exited."""
    found = await asyncio.to_thread(_find, hosts, run_id)
    if found is None:
        return None
    host, client, container = found
    try:
        if container.status != "running":
            sys.stderr.write(f"gpubench-launch: container {container.short_id} on {host} already {container.status}\n")
            return errors.OK
        if await asyncio.to_thread(stop, container):
            sys.stderr.write(f"gpubench-launch: container {container.short_id} on {host} stopped\n")
            return errors.OK
        sys.stderr.write(f"gpubench-launch: container {container.short_id} on {host} not confirmed stopped\n")
        return errors.LAUNCHER_TROUBLE
    finally:
        client.close()


def stop(container) -> bool:
    """SIGINT, up to half the confirm time (30 s at most) to store and exit, then `docker stop`; whether it exited."""
    from ..pace import Pace

    pace = Pace.from_env()
    with contextlib.suppress(Exception):
        container.kill(signal="SIGINT")
    with contextlib.suppress(Exception):
        container.wait(timeout=min(30.0, pace.confirm_timeout_s / 2))
    with contextlib.suppress(Exception):
        container.reload()
    if container.status == "running":
        with contextlib.suppress(Exception):
            container.stop(timeout=docker_run.STOP_TIMEOUT_S)
        with contextlib.suppress(Exception):
            container.reload()
    return container.status in ("exited", "dead")


async def cleanup(provider: str, hosts: list[str], all_hosts: bool, dry_run: bool) -> int:
    return await asyncio.to_thread(_cleanup, provider, hosts, all_hosts, dry_run)


def _cleanup(provider: str, hosts: list[str], all_hosts: bool, dry_run: bool) -> int:
    """The launcher's containers whose launcher is gone: a running one stopped (SIGINT first: the run stores what it
    measured), then removed; an exited one removed (or both listed, with --dry-run). One whose launcher runs is left
    alone; one launched from another machine too, unless --all."""
    from ..state import all_states, launcher_alive

    code, lines, kept = errors.OK, [], set()
    for host, client in _clients(hosts):
        for container in containers(client):
            run_id = container.labels.get(f"{LABEL}.run-id", "-")
            attached = launcher_alive(container.labels.get(f"{LABEL}.launcher", ""))
            running = container.status == "running"
            if attached:
                action = "left alone: its launcher is running"
            elif attached is None and not all_hosts:
                action = "left alone: launched from another host (use --all)"
            elif dry_run:
                action = f"would {'stop and ' if running else ''}remove: DOCKER_HOST={host} docker rm -f" \
                         f" {container.short_id}"
            elif running and not stop(container):
                action, code = "NOT confirmed stopped", errors.LAUNCHER_TROUBLE
            else:
                with contextlib.suppress(Exception):
                    container.remove(force=True, v=True)
                action = "stopped and removed" if running else "removed"
            if not action.endswith("removed"):
                kept.add(run_id)
            lines.append(f"container {container.short_id:12} run {run_id:48} {container.status:8} on {host} {action}")
    if not dry_run:  # the state files of dead launchers whose containers are gone
        for state in all_states():
            if (state.get("provider") == provider and state.get("run_id") not in kept
                    and launcher_alive(state.get("launcher", "")) is not True):
                Path(state["_path"]).unlink(missing_ok=True)
    sys.stdout.write("\n".join(lines) + "\n" if lines else
                     f"gpubench-launch cleanup: no gpubench container on {', '.join(hosts)}\n")
    return code
