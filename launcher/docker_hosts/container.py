"""One run as one container on a Docker host: the workload's pinned image runs its own `gpubench run ...` with the GPUs
asked for (gpubench/run/docker_run.py makes the container as `gpubench run --docker` does), its output streams into
the run folder the launcher writes (the record stream, as a Runcrate job's), and at the end the files the stream does
not carry (config.json with the environment, the summaries) are copied out and the container is removed.

A container this call started is never left running by this call: Ctrl-C, --max-minutes and any error send SIGINT
(`gpubench run` records `interrupted` and stores what it measured), then stop it. If the launcher is killed, the
container keeps running under its own safety net (`timeout` in the container stops it at the plan's max runtime);
its labels (run id, sweep, cell, launcher) let a sweep's next call follow it and `cleanup` stop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from gpubench.run import docker_run
from gpubench.run_args import RunArgs

from .. import errors
from ..context import Launch
from ..plan import RunPlan
from ..results import RunFolder, RunOutcome
from ..state import LaunchState, launcher_tag

LABEL = docker_run.LABEL
KILL_AFTER_S = 60  # the safety net's SIGINT comes this long before its SIGKILL (as Slurm's --signal=INT@60)


def labels(plan, run: RunPlan) -> dict[str, str]:
    """The run's tags as container labels: io.gpubench.run-id, .sweep, .cell, .launcher, ..."""
    tags = plan.tags(run, launcher_tag())
    return {LABEL if key == "gpubench" else f"{LABEL}.{key.removeprefix('gpubench_').replace('_', '-')}": value
            for key, value in tags.items()}


def containers(client, **wanted: str) -> list:
    """The launcher's containers on an engine (running or not), with the given label values (run_id=..., sweep=...)."""
    filters = [f"{LABEL}.launcher"] + [f"{LABEL}.{k.replace('_', '-')}={v}" for k, v in wanted.items()]
    return client.containers.list(all=True, filters={"label": filters})


def live_entry(container_id: str, host: str) -> str:
    """What Launch.live holds of a running container (shown by a second Ctrl-C; read back by stop_command)."""
    return f"container {container_id} on {host}"


def stop_command(live: dict[str, str]) -> str:
    """The command that stops the containers of `live` (live_entry's), one `docker -H HOST rm -f` per host."""
    by_host: dict[str, list[str]] = {}
    for entry in live.values():
        container_id, _, host = entry.removeprefix("container ").partition(" on ")
        by_host.setdefault(host, []).append(container_id)
    return "; ".join(shlex.join(["docker", "-H", host, "rm", "-f", *ids]) for host, ids in by_host.items())


def entrypoint(plan) -> tuple[list[str], list[str]]:
    """The container's entrypoint and command: the image's `gpubench` under a safety net (`timeout` sends SIGINT at
    the plan's max runtime, SIGKILL a minute later); a --job-command runs in `sh -c`."""
    guard = ["timeout", "--signal=INT", f"--kill-after={KILL_AFTER_S}", f"{plan.max_runtime_minutes * 60}"]
    words = shlex.split(plan.command)
    if words[:2] == ["gpubench", "run"]:
        return [*guard, "gpubench"], words[1:]
    return [*guard, "sh", "-c"], [plan.command]


class ContainerRun:
    def __init__(self, launch: Launch, run: RunPlan, provider, adopt: Any = None):
        self.launch = launch
        self.run = run
        self.provider = provider
        self.adopt = adopt  # a container an earlier call started (found by its labels): followed, not started again
        self.view = launch.view
        self.pace = launch.pace
        self.redact = launch.redact
        self.run_id = run.run_id
        plan = launch.plan
        self.gpu = plan.settings.gpu(run.candidates[0].requested)
        self.count = run.candidates[0].count
        self.client = None
        self.container = None
        self.on_gpus: bool | None = None  # whether it got GPUs (False: the host's CPU, for --smoke)
        self.stopped_by: str | None = None
        self.cancel_confirmed: bool | None = None
        self.exit_status: int | None = None
        self.notes: list[str] = []

    # --- the whole run -----------------------------------------------------------------------
    async def execute(self) -> RunOutcome:
        plan = self.launch.plan
        started = time.monotonic()
        if self.adopt is not None:  # a killed launcher's partial folder: the container's output is read again
            shutil.rmtree(Path(plan.results_dir) / self.run_id, ignore_errors=True)
        folder = RunFolder(plan.results_dir, self.run_id, {**plan.config(self.run), "host": self.gpu.host},
                           self.view, self.redact)
        state = LaunchState(self.run_id)
        state.save(provider=plan.provider, kind="container", workload=plan.workload.name, host=self.gpu.host,
                   container_id=None)
        turn = await self.provider.turn(self.gpu.host, self.adopt is not None, self.launch.interrupted, self.view,
                                        self.run_id)
        try:
            if turn is None:
                return self._not_launched(folder, state, "interrupted before the container was started")
            try:
                chunks = await asyncio.to_thread(self.start)
            except docker_run.DockerUnavailable as exc:
                self.view.update(self.run_id, status="refused")
                return self._not_launched(folder, state, str(exc), errors.BAD_INPUT)
            state.save(container_id=self.container.id)
            self.launch.live[self.run_id] = live_entry(self.container.short_id, self.gpu.host)
            self.view.say(self.run_id, f"container {self.container.short_id} "
                                       f"{'followed again' if self.adopt is not None else 'started'} on "
                                       f"{self.gpu.host} ({self.where()}, image {plan.image})")
            try:
                await self.follow_until_end(folder, chunks)
            except BaseException:
                await asyncio.shield(asyncio.to_thread(self.emergency_stop))
                folder.close()
                raise
            facts = await asyncio.to_thread(self.finish, folder)
        finally:
            if turn is not None:
                turn.release()
            if self.client is not None:
                self.client.close()
        folder.write_facts(facts)
        code = self.exit_code(folder, facts)
        stored, store_ok = await folder.store(self.launch.store)
        if not store_ok:
            code = max(code, errors.LAUNCHER_TROUBLE)
        if self.cancel_confirmed is not False:
            state.remove()
            self.launch.live.pop(self.run_id, None)
        ok, total = folder.setup_counts()
        return RunOutcome(self.run_id, code, self.stopped_by or facts["status"], gpu=self.gpu.name,
                          region=self.gpu.host, duration_s=time.monotonic() - started, setups_ok=ok,
                          setups_total=total, stored=stored, message="; ".join(self.notes), setups=folder.setup_rows())

    def _not_launched(self, folder: RunFolder, state: LaunchState, why: str,
                      code: int = errors.INTERRUPTED) -> RunOutcome:
        folder.discard()
        state.remove()
        return RunOutcome(self.run_id, code, "refused" if code == errors.BAD_INPUT else "not launched",
                          launched=False, message=why)

    def gpus(self) -> str | None:
        """docker_run.parse_gpus' form of what the container gets (None: the host's CPU)."""
        return self.gpu.gpus(self.count, self.on_gpus is not False)

    def where(self) -> str:
        return f"GPUs {self.gpus()}" if self.gpus() else "its CPU"

    # --- starting ----------------------------------------------------------------------------
    def start(self):
        """Connect, create the container (the image pulled when the engine lacks it), attach to its output, start it;
        for a container an earlier call started, attach only. Returns the output stream; DockerUnavailable is one
        line saying why nothing runs (and nothing is left behind)."""
        self.client = docker_run.connect(None, self.gpu.host)
        if self.adopt is not None:  # its output so far, then on: an attach would wait forever on one that exited
            self.container = self.client.containers.get(self.adopt.id)
            return None
        plan = self.launch.plan
        self.view.update(self.run_id, status="image", obtained=self.gpu.host)
        image = docker_run.ensure_image(self.client, plan.image, lambda line: self.view.say(self.run_id, line))
        self.on_gpus = self.provider.has_gpus(self.client)
        env = {**self.run.env, "GPUBENCH_IMAGE_DIGEST": docker_run.image_digest(image)}
        entry, command = entrypoint(plan)
        spec = docker_run.container_spec(
            plan.workload, RunArgs(workload=plan.workload.name, run_id=self.run_id), image=plan.image,
            cache_volume=plan.settings.cache_volume, env=env, gpus=self.gpus(), command=command, entrypoint=entry,
            labels=labels(plan, self.run), owned=False)
        api_error = docker_run._docker().errors.APIError
        for retry in (False, True):
            self.container = self.client.containers.create(name=f"gpubench-{self.run_id}", **spec)
            # Attached before the start, so no early line is missed however fast the container exits.
            chunks = self.client.api.attach(self.container.id, stdout=True, stderr=True, stream=True, logs=True,
                                            demux=True)
            try:
                self.container.start()
                return chunks
            except api_error as exc:
                with contextlib.suppress(Exception):
                    self.container.remove(force=True, v=True)
                explanation = docker_run._one_line(exc.explanation or exc)
                if "gpu" in explanation.lower():
                    raise docker_run.no_gpu_error(self.client, exc) from None
                if "rlimit" not in explanation or retry:
                    raise docker_run.DockerUnavailable(f"{self.gpu.host} could not start the container"
                                                       f" ({explanation})", "see the engine's log") from None
                # An engine without CAP_SYS_RESOURCE cannot raise a hard limit: run with the engine's default.
                spec["ulimits"] = [u for u in spec["ulimits"] if u["Name"] != "memlock"]
        raise AssertionError("unreachable")

    def read_logs(self, feed) -> None:
        """A container an earlier call started: its stdout and its stderr from their start to the container's end,
        each a stream of its own (so a stderr write cannot split a record line)."""
        def read(stdout: bool) -> None:
            chunks = self.client.api.logs(self.container.id, stdout=stdout, stderr=not stdout, stream=True,
                                          follow=True)
            docker_run.pump(((chunk, None) for chunk in chunks), feed, feed)

        errors_reader = threading.Thread(target=read, args=(False,), daemon=True)
        errors_reader.start()
        read(True)
        errors_reader.join()

    # --- while it runs -----------------------------------------------------------------------
    async def follow_until_end(self, folder: RunFolder, chunks) -> None:
        loop = asyncio.get_running_loop()

        def feed(line: str) -> None:  # from the reading thread: the folder and the view belong to the loop
            loop.call_soon_threadsafe(folder.feed, line)

        self.view.update(self.run_id, status="running", obtained=self.gpu.host)
        if chunks is None:
            reading = asyncio.ensure_future(asyncio.to_thread(self.read_logs, feed))
        else:
            reading = asyncio.ensure_future(asyncio.to_thread(docker_run.pump, chunks, feed, feed))
        interrupt = asyncio.ensure_future(self.launch.interrupted.wait())
        plan = self.launch.plan
        limit = None if plan.max_minutes is None else plan.max_minutes * 60
        try:
            done, _ = await asyncio.wait({reading, interrupt}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
            if reading not in done:
                self.stopped_by = "interrupt" if interrupt in done else "max-minutes"
                if self.stopped_by == "max-minutes":
                    self.view.say(self.run_id, f"--max-minutes {plan.max_minutes:g} reached: stopping the container")
                await self.stop_and_confirm(reading)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reading), timeout=self.pace.drain_timeout_s)
        finally:
            interrupt.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await interrupt
        await asyncio.sleep(0)  # the lines the reading thread handed over last

    async def stop_and_confirm(self, reading) -> None:
        """SIGINT (the run stores what it measured), then a stop after half the confirm time (30 s at most); confirmed
        when the engine shows the container exited."""
        self.view.update(self.run_id, status="stopping")
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.container.kill, signal="SIGINT")
        grace = min(30.0, self.pace.confirm_timeout_s / 2)
        done, _ = await asyncio.wait({reading}, timeout=grace)
        if not done:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.container.stop, timeout=docker_run.STOP_TIMEOUT_S)
            await asyncio.wait({reading}, timeout=self.pace.confirm_timeout_s - grace)
        self.cancel_confirmed = await asyncio.to_thread(self._exited)
        if self.cancel_confirmed:
            self.view.say(self.run_id, f"container {self.container.short_id} stopped ({self.stopped_by})")
        else:
            self.notes.append(f"container {self.container.short_id} not confirmed stopped: "
                              f"DOCKER_HOST={self.gpu.host} docker stop {self.container.short_id}")

    def _exited(self) -> bool:
        try:
            self.container.reload()
        except Exception:  # gone: removed by someone else
            return True
        return self.container.status in ("exited", "dead")

    def emergency_stop(self) -> None:
        """Something went wrong in the launcher itself: stop the container before leaving."""
        if self.container is None:
            return
        with contextlib.suppress(Exception):
            self.container.stop(timeout=docker_run.STOP_TIMEOUT_S)

    # --- the end -------------------------------------------------------------------------------
    def finish(self, folder: RunFolder) -> dict[str, Any]:
        """The container's facts (job.json), its run folder's other files copied out, then the container removed."""
        container = self.container
        ended = self._exited()
        if ended:
            with contextlib.suppress(Exception):
                self.exit_status = int(container.wait(timeout=30).get("StatusCode", 1))
        state = (container.attrs or {}).get("State", {})
        facts = self.facts(state)
        if ended:
            docker_run.copy_run_folder(container, folder.path, lambda line: self.view.say(self.run_id, line))
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
        return facts

    def facts(self, state: dict[str, Any]) -> dict[str, Any]:
        plan = self.launch.plan
        started_at = state.get("StartedAt") if not str(state.get("StartedAt", "")).startswith("0001") else None
        ended_at = state.get("FinishedAt") if not str(state.get("FinishedAt", "")).startswith("0001") else None
        seconds = _seconds_between(started_at, ended_at)
        if self.exit_status is None:
            status = "unknown"
        elif self.stopped_by is not None:
            status = "cancelled"
        elif self.exit_status == 124:
            status = "timed out"
        else:
            status = "succeeded" if self.exit_status == 0 else "failed"
        return {
            "provider": plan.provider,
            "run_id": self.run_id,
            "job_id": self.container.id,
            "container": f"gpubench-{self.run_id}",
            "host": self.gpu.host,
            "image": plan.image,
            "gpus": self.gpus() or "none",
            "gpu_count": self.count if self.on_gpus is not False else 0,
            "status": status,
            "exit_code": self.exit_status,
            "error": state.get("Error") or None,
            "oom_killed": state.get("OOMKilled"),
            "started_at": started_at,
            "ended_at": ended_at,
            "max_runtime_minutes": plan.max_runtime_minutes,
            "gpu_hours": None if seconds is None else round(seconds / 3600 * (self.count if self.on_gpus else 0), 6),
            "cost_usd": None,  # an owned machine: nothing billed here
            "stopped_by": self.stopped_by,
            "cancel_confirmed": self.cancel_confirmed,
        }

    def exit_code(self, folder: RunFolder, facts: dict[str, Any]) -> int:
        if self.stopped_by == "interrupt":
            return errors.INTERRUPTED
        if self.cancel_confirmed is False or self.exit_status is None:
            return errors.LAUNCHER_TROUBLE
        if self.stopped_by is not None:
            return errors.LIMIT_REACHED
        if facts["status"] != "succeeded":
            why = folder.error_line()
            detail = (f"its safety net of {facts['max_runtime_minutes']} min ran out" if facts["status"] == "timed out"
                      else f"exit code {self.exit_status}")
            facts["error"] = facts["error"] or why
            self.notes.append(f"container {facts['status']}: {detail}" + (f": {why}" if why else ""))
            folder.write_facts(facts)
            return errors.JOB_NOT_SUCCEEDED
        return folder.records_code()


def _seconds_between(start: str | None, end: str | None) -> float | None:
    from datetime import datetime

    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end[:26].rstrip("Z")) - datetime.fromisoformat(start[:26].rstrip("Z"))
                ).total_seconds()
    except ValueError:
        return None

