"""The instance path: a container-type instance whose launch script runs the same command, its
output streamed over SSH (asyncssh), terminated at the end and checked gone from the instance list.

Timeline, in seconds after the create call returned (the first-matmul study reads these):
create -> API running (status running with an IP; polled every poll_s) -> first SSH (`echo ok`,
retried every ssh_retry_s once there is an IP) -> first result record seen by the launcher.

The launch script writes the command's stdout and stderr to ~/gpubench/<run-id>/{stdout,stderr}.log
(apart, so a stderr write cannot split a record line) and its exit code to .../exit_code, so the
command keeps going if SSH drops; the launcher reads each file from its last byte offset after a
reconnect (no line lost or repeated).
"""

from __future__ import annotations

import asyncio
import codecs
import shlex
import time
from typing import Any

from gpubench.run.ingest import LineAssembler
from gpubench.schema import SetupResult

from .. import errors
from ..context import Launch
from ..plan import RunPlan
from ..results import RunFolder, RunOutcome
from ..state import LaunchState
from .calls import CountedCalls
from .client import api_errors, describe

RUNNING = ("running", "deployed")
GONE = ("terminated", "failed", "stopped", "deleted", "error")


class Refused(Exception):
    """No instance could be created: nothing is billed."""


class MachineLost(Exception):
    """The instance failed, vanished, or never became usable."""


def instance_dir(run_id: str) -> str:
    return f"$HOME/gpubench/{run_id}"


def launch_script(run_id: str, command: str, env: dict[str, str]) -> str:
    d = instance_dir(run_id)
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return f"""#!/bin/bash
# gpubench-launch: run one benchmark, keep its output and exit code for the launcher (over SSH).
d="{d}"
mkdir -p "$d"
{exports}
( cd "$d" && exec bash -c {shlex.quote(command)} ) > "$d/stdout.log" 2> "$d/stderr.log" < /dev/null &
echo $! > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
wait $!
echo $? > "$d/exit_code.tmp" && mv "$d/exit_code.tmp" "$d/exit_code"
"""


def stream_command(run_id: str, stream: str, offset: int) -> str:
    """Print stdout.log or stderr.log from byte `offset` on as it grows, until the command ended;
    the stdout reader then exits with the command's exit code."""
    d = instance_dir(run_id)
    command = (
        f'd="{d}"; while [ ! -s "$d/pid" ]; do sleep 0.2; done; '
        f'tail -c +{offset + 1} -s 0.2 -F --pid="$(cat "$d/pid")" "$d/{stream}.log" 2>/dev/null; '
        f'while [ ! -s "$d/exit_code" ]; do sleep 0.2; done; '
    )
    return command + ('exit "$(cat "$d/exit_code")"' if stream == "stdout" else "exit 0")


class InstanceRun:
    def __init__(self, launch: Launch, run: RunPlan, client, study: bool = False):
        self.launch = launch
        self.run = run
        self.study = study
        self.client = client
        self.pace = launch.pace
        self.view = launch.view
        self.redact = launch.redact
        self.run_id = run.run_id
        self.name = f"gpubench-{run.run_id}"
        self.calls = CountedCalls(self.redact)
        self.instance = None
        self.row = None
        self.key = None
        self.ssh_key_id: str | None = None
        self.t0: float | None = None  # when the create call returned
        self.times: dict[str, float | None] = {"create_call_s": None, "api_running_s": None,
                                               "first_ssh_s": None, "first_result_s": None}
        self.running_at: float | None = None
        self.ended_at: float | None = None
        self.exit_status: int | None = None
        self.stopped_by: str | None = None
        self.lost: str | None = None
        self.terminated: bool | None = None
        self.reconnects = 0
        self.lines: dict[str, LineAssembler] = {}
        self.conn = None
        self._reconnecting = asyncio.Lock()
        self.notes: list[str] = []

    # --- the whole run -----------------------------------------------------------------------
    async def execute(self) -> RunOutcome:
        plan = self.launch.plan
        started = time.monotonic()
        folder = RunFolder(plan.results_dir, self.run_id, plan.config(self.run), self.view, self.redact)
        state = LaunchState(self.run_id)
        state.save(provider=plan.provider, kind="instance", workload=plan.workload.name, instance_name=self.name,
                   instance_id=None)
        self.state = state
        try:
            try:
                created = await self.create()
            except Refused as exc:
                return await self._not_launched(folder, state, started, str(exc))
            if created is None:
                await self._delete_key()
                folder.discard()
                state.remove()
                return RunOutcome(self.run_id, errors.INTERRUPTED, "not launched", launched=False,
                                  message="interrupted before the instance was created")
            await self.run_on_instance(folder)
        except BaseException:
            await asyncio.shield(self.stop_machine())
            folder.close()
            raise
        await self.stop_machine()
        if self.study:
            self.feed_study_record(folder)
        folder.write_facts(self.facts())
        code = self.exit_code(folder)
        stored, store_ok = await folder.store(self.launch.store)
        if not store_ok:
            code = max(code, errors.LAUNCHER_TROUBLE)
        if self.terminated:
            state.remove()
            self.launch.live.pop(self.run_id, None)
        ok, total = folder.setup_counts()
        return RunOutcome(
            self.run_id, code, self.stopped_by or self._status(), gpu=self.row.gpu_type if self.row else None,
            region=self.row.region if self.row else None, cost_usd=self.cost_estimate(),
            duration_s=time.monotonic() - started, setups_ok=ok, setups_total=total, stored=stored,
            message="; ".join(self.notes), setups=folder.setup_rows(),
        )

    async def _not_launched(self, folder: RunFolder, state: LaunchState, started: float, why: str) -> RunOutcome:
        await self._delete_key()
        state.remove()
        self.view.update(self.run_id, status="refused")
        if not self.study:
            folder.discard()
            return RunOutcome(self.run_id, errors.BAD_INPUT, "refused", message=why, launched=False)
        # The study keeps the failed launch: its failures are part of what it measures.
        self.feed_study_record(folder, error=why)
        folder.write_facts(self.facts())
        stored, _ = await folder.store(self.launch.store)
        return RunOutcome(self.run_id, errors.JOB_NOT_SUCCEEDED, "not launched", duration_s=time.monotonic() - started,
                          stored=stored, message=why, setups=folder.setup_rows())

    # --- create ------------------------------------------------------------------------------
    async def create(self):
        """The instance, trying each candidate row in order; None if interrupted first."""
        import asyncssh
        from runcrate import ApiError

        plan = self.launch.plan
        if self.launch.interrupted.is_set():
            return None
        self.key = asyncssh.generate_private_key("ssh-ed25519")
        public = self.key.export_public_key().decode().strip()
        self.view.update(self.run_id, status="ssh key")
        try:
            ssh_key = await self.calls("ssh_keys.create", lambda: self.client.ssh_keys.create(
                name=self.name, public_key=public), idempotent=False)
        except api_errors() as exc:
            raise Refused(f"could not register an SSH key: {describe(exc, self.redact)}") from None
        self.ssh_key_id = ssh_key.id
        self.state.save(ssh_key_id=ssh_key.id)
        rows = [row for choice in self.run.candidates for row in choice.rows]
        script = launch_script(self.run_id, plan.command, self.run.env)
        tried = []
        for row in rows:
            if self.launch.interrupted.is_set():
                return None
            self.view.update(self.run_id, status="creating", obtained=row.gpu_type, region=row.region)
            call_started = time.monotonic()
            try:
                instance = await self.calls("instances.create", lambda row=row: self.client.instances.create(
                    name=self.name, ssh_key_id=ssh_key.id, instance_type_id=row.id, env_vars=self.run.env,
                    launch_script=script, max_runtime_minutes=max(5, plan.max_runtime_minutes), template=plan.template,
                ), idempotent=False)
            except ApiError as exc:
                tried.append(f"{row.id}: {describe(exc, self.redact)}")
                if exc.status_code in (401, 402, 403):
                    break
                instance = await self._created_anyway(exc) if exc.status_code >= 500 else None
            except api_errors() as exc:
                tried.append(f"{row.id}: {describe(exc, self.redact)}")
                instance = await self._created_anyway(exc)
            if instance is not None:
                self.t0 = time.monotonic()
                self.times["create_call_s"] = round(self.t0 - call_started, 3)
                self.instance, self.row = instance, row
                self.state.save(instance_id=instance.id, instance_type_id=row.id)
                self.launch.live[self.run_id] = f"instance {instance.id}"
                self.view.say(self.run_id, f"instance {instance.id} created ({row.gpu_type} {row.deployment_type}, "
                                           f"{row.region}, ${row.hourly_rate:g}/h)")
                return instance
        raise Refused("no instance could be created: " + "; ".join(tried))

    async def _created_anyway(self, exc: BaseException):
        """After a 5xx or a lost answer the create may still have happened: look before going on."""
        try:
            found = await self.calls("instances.list", lambda: self.client.instances.list(search=self.name))
        except api_errors():
            return None
        for instance in found:
            if instance.name == self.name and instance.status not in GONE:
                self.notes.append(f"create answered {describe(exc, self.redact)} but instance {instance.id} exists")
                return instance
        return None

    # --- run ---------------------------------------------------------------------------------
    async def pause(self, seconds: float) -> bool:
        """Sleep; True if interrupted meanwhile."""
        try:
            await asyncio.wait_for(self.launch.interrupted.wait(), timeout=max(0.0, seconds))
            return True
        except TimeoutError:
            return False

    async def run_on_instance(self, folder: RunFolder) -> None:
        try:
            if not await self.wait_running():
                self.stopped_by = "interrupt"
                return
            conn = await self.first_ssh()
            if conn is None:
                self.stopped_by = "interrupt"
                return
            await self.stream_until_end(conn, folder)
        except MachineLost as exc:
            self.lost = str(exc)
            self.view.say(self.run_id, f"machine lost: {exc}")

    async def wait_running(self) -> bool:
        deadline = self.t0 + self.pace.boot_timeout_s
        instance = self.instance
        while True:
            if instance.status in RUNNING and instance.ip:
                self.running_at = time.monotonic()
                self.times["api_running_s"] = round(self.running_at - self.t0, 3)
                self.instance = instance
                self.view.update(self.run_id, status="running")
                return True
            if instance.status in GONE:
                why = instance.stop_reason or "no reason given"
                raise MachineLost(f"instance {instance.id} is {instance.status} ({why})")
            if time.monotonic() > deadline:
                raise MachineLost(f"instance {instance.id} not running after {self.pace.boot_timeout_s:g} s")
            if await self.pause(self.pace.poll_s):
                return False
            try:
                instance = await self.calls("instances.get", lambda: self.client.instances.get(self.instance.id))
            except api_errors():
                pass
            self.view.update(self.run_id, status=instance.status)

    def ssh_port(self) -> int:
        return int((self.instance.model_extra or {}).get("ssh_port") or 22)

    async def connect(self):
        import asyncssh

        return await asyncio.wait_for(asyncssh.connect(
            self.instance.ip, port=self.ssh_port(), username="root", client_keys=[self.key],
            known_hosts=None, connect_timeout=10, keepalive_interval=15,
        ), timeout=20)

    async def first_ssh(self):
        """The first connection that runs `echo ok`; None if interrupted. Its time is the study's first SSH."""
        import asyncssh

        deadline = self.t0 + self.pace.boot_timeout_s
        while True:
            try:
                conn = await self.connect()
                result = await asyncio.wait_for(conn.run("echo ok", check=False), timeout=20)
                if str(result.stdout).strip() == "ok":
                    if self.times["first_ssh_s"] is None:
                        self.times["first_ssh_s"] = round(time.monotonic() - self.t0, 3)
                        self.view.update(self.run_id, status="ssh ok")
                    return conn
                conn.close()
            except (OSError, asyncssh.Error, TimeoutError):
                pass
            if time.monotonic() > deadline:
                where = f"{self.instance.ip}:{self.ssh_port()}"
                raise MachineLost(f"no SSH to {where} after {self.pace.boot_timeout_s:g} s")
            if await self.pause(self.pace.ssh_retry_s):
                return None

    def limit_deadline(self) -> tuple[float | None, str | None]:
        plan = self.launch.plan
        options = []
        if plan.max_minutes is not None:
            options.append((self.t0 + plan.max_minutes * 60, "max-minutes"))
        if plan.max_cost is not None and self.row and self.row.hourly_rate > 0:
            options.append((self.running_at + plan.max_cost / self.row.hourly_rate * 3600, "max-cost"))
        return min(options) if options else (None, None)

    async def stream_until_end(self, conn, folder: RunFolder) -> None:
        def on_line(line: str) -> None:
            record = folder.feed(line)
            if isinstance(record, SetupResult) and self.times["first_result_s"] is None and record.status == "ok":
                self.times["first_result_s"] = round(time.monotonic() - self.t0, 3)

        self.lines = {name: LineAssembler(on_line) for name in ("stdout", "stderr")}
        self.conn = conn
        readers = asyncio.gather(self.read_output("stdout"), self.read_output("stderr"))
        interrupt = asyncio.create_task(self.launch.interrupted.wait())
        deadline, reason = self.limit_deadline()
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            done, _ = await asyncio.wait({readers, interrupt}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if readers in done:
                readers.result()  # MachineLost propagates
            elif interrupt in done:
                self.stopped_by = "interrupt"
            else:
                self.stopped_by = reason
                self.view.say(self.run_id, f"--{reason} reached: terminating the instance")
        finally:
            readers.cancel()
            interrupt.cancel()
            await asyncio.gather(readers, interrupt, return_exceptions=True)
            for assembler in self.lines.values():
                assembler.flush()
            self.conn.close()

    async def read_output(self, stream: str) -> None:
        """Stream one output file from the last byte read; reconnect on a dropped connection."""
        import asyncssh

        offset = 0
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            conn = self.conn
            try:
                process = await conn.create_process(stream_command(self.run_id, stream, offset), encoding=None)
                while True:
                    data = await process.stdout.read(65536)
                    if not data:
                        break
                    offset += len(data)
                    self.lines[stream].feed(self.redact(decoder.decode(data)))
                await process.wait()
                if process.exit_status is None:
                    raise asyncssh.ConnectionLost("the stream ended without an exit status")
                if stream == "stdout":
                    self.exit_status = process.exit_status
                    self.view.update(self.run_id, status="succeeded" if self.exit_status == 0 else "failed")
                return
            except (OSError, asyncssh.Error):
                await self.reconnect(conn)

    async def reconnect(self, broken) -> None:
        """A new connection for both readers (once, whichever reader noticed first)."""
        import asyncssh

        async with self._reconnecting:
            if self.conn is not broken:
                return  # the other reader already reconnected
            self.reconnects += 1
            broken.close()
            while True:
                if await self.machine_gone():
                    raise MachineLost(f"instance {self.instance.id} went away while running") from None
                try:
                    self.conn = await self.connect()
                    return
                except (OSError, asyncssh.Error, TimeoutError):
                    await asyncio.sleep(self.pace.ssh_retry_s)

    async def machine_gone(self) -> bool:
        try:
            instance = await self.calls("instances.get", lambda: self.client.instances.get(self.instance.id))
        except api_errors():
            return False
        return instance.status in GONE

    # --- stop ----------------------------------------------------------------------------------
    async def stop_machine(self) -> None:
        """Terminate the instance and read the list until it no longer shows it live; drop the SSH key."""
        from runcrate import NotFoundError

        if self.instance is not None and self.terminated is None:
            self.terminated = False
            self.view.update(self.run_id, status="terminating")
            try:
                await self.calls("instances.terminate", lambda: self.client.instances.terminate(self.instance.id))
            except NotFoundError:
                pass
            except api_errors() as exc:
                self.notes.append(f"terminate failed: {describe(exc, self.redact)}")
            self.ended_at = time.monotonic()
            deadline = time.monotonic() + self.pace.confirm_timeout_s
            while time.monotonic() < deadline:
                try:
                    listed = await self.calls("instances.list", lambda: self.client.instances.list(search=self.name))
                except api_errors():
                    listed = None
                if listed is not None and not any(i.id == self.instance.id and i.status not in GONE for i in listed):
                    self.terminated = True
                    break
                await asyncio.sleep(min(2.0, self.pace.poll_s))
            if self.terminated:
                self.view.say(self.run_id, f"instance {self.instance.id} terminated (gone from the instance list)")
            else:
                self.notes.append(f"instance {self.instance.id} still listed: run gpubench-launch cancel {self.run_id}")
        await self._delete_key()

    async def _delete_key(self) -> None:
        if self.ssh_key_id is None:
            return
        try:
            await self.calls("ssh_keys.delete", lambda: self.client.ssh_keys.delete(self.ssh_key_id))
            self.ssh_key_id = None
        except api_errors():
            self.notes.append(f"SSH key {self.ssh_key_id} not deleted (gpubench-launch cleanup removes it)")

    # --- facts and outcome -------------------------------------------------------------------
    def cost_estimate(self) -> float | None:
        if self.row is None or self.running_at is None:
            return 0.0 if self.row is None else None
        end = self.ended_at or time.monotonic()
        return round(self.row.hourly_rate * (end - self.running_at) / 3600, 6)

    def _status(self) -> str:
        if self.lost:
            return "lost"
        if self.exit_status is None:
            return "unknown"
        return "succeeded" if self.exit_status == 0 else "failed"

    def facts(self) -> dict[str, Any]:
        instance = self.instance
        return {
            "provider": self.launch.plan.provider,
            "via": "instance",
            "run_id": self.run_id,
            "job_id": instance.id if instance else None,  # the instance is the run's job
            "instance_id": instance.id if instance else None,
            "instance_name": self.name,
            "instance_type_id": self.row.id if self.row else None,
            "deployment_type": self.row.deployment_type if self.row else None,
            "status": self._status(),
            "exit_code": self.exit_status,
            "gpu_requested": [c.wire for c in self.run.candidates],
            "gpu_type": self.row.gpu_type if self.row else None,
            "gpu_count": self.row.gpu_count if self.row else None,
            "region": self.row.region if self.row else None,
            "cost_per_hour": self.row.hourly_rate if self.row else None,
            "cost_usd": self.cost_estimate(),
            "gpu_hours": None,  # billed in dollars: cost_usd
            "error": self.lost,
            "started_at": self.times.get("api_running_s"),  # seconds after the create call; None: never ran
            "cost_note": "estimated: hourly rate x time from API running to terminate (billing starts at running)",
            "timeline_s": self.times,
            "failures": self.calls.failures,
            "stopped_by": self.stopped_by,
            "lost": self.lost,
            "terminated_confirmed": self.terminated,
            "ssh_reconnects": self.reconnects,
            "instance": instance.model_dump(mode="json") if instance else None,
        }

    def exit_code(self, folder: RunFolder) -> int:
        if self.stopped_by == "interrupt":
            return errors.INTERRUPTED
        if self.terminated is False or self.lost:
            if self.lost:
                self.notes.append(f"lost: {self.lost}")
            return errors.LAUNCHER_TROUBLE
        if self.stopped_by is not None:
            return errors.LIMIT_REACHED
        if self.exit_status != 0:
            self.notes.append(f"command exit code {self.exit_status}")
            return errors.JOB_NOT_SUCCEEDED
        return folder.records_code()

    def feed_study_record(self, folder: RunFolder, error: str | None = None) -> None:
        from gpubench.schema import to_line

        from .first_matmul import launch_record

        record = launch_record(self, error)
        folder.feed(to_line(record))
