"""Instances: machines you SSH into. Each one becomes ``running`` after its deployment type's
delay, then gets ``ip`` 127.0.0.1, its own sshd (``ssh_port``) and its launch script run."""

from __future__ import annotations

import base64
import binascii
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from . import validation as check
from .catalogue import Capacity, canonical_gpu, matching_rows
from .process import command_environment, kill_group, kill_machine
from .settings import Settings
from .ssh_keys import SshKeyStore
from .sshd import SshHub, SshTarget
from .wire import ApiError, conflict, invalid, iso, not_found, utc_now

ENDED_STATUSES = frozenset({"terminated", "failed"})


@dataclass
class Instance:
    id: str
    name: str
    ssh_key_id: str
    instance_type: dict[str, Any]
    home: Path
    env: dict[str, str]
    launch_script: str | None
    cpu_cores: int
    memory: int
    storage: int
    template: str | None
    max_runtime_minutes: int | None
    idle_shutdown_minutes: int | None
    status: str = "creating"
    history: list[tuple[str, float]] = field(default_factory=lambda: [("creating", time.monotonic())])
    """Each status it took and time.monotonic() when it did (tests read the lifecycle here, not by polling)."""
    created_at: datetime = field(default_factory=utc_now)
    updated_at: datetime = field(default_factory=utc_now)
    deployed_at: datetime | None = None
    running_since: float | None = None
    """time.monotonic() when it first became running (max_runtime counts from here)."""
    auto_stop_at: datetime | None = None
    stop_reason: str | None = None
    ip: str | None = None
    ssh_port: int | None = None
    launch_exit_code: int | None = None
    launch_process: subprocess.Popen | None = None
    process_groups: set[int] = field(default_factory=set)
    wake: threading.Event = field(default_factory=threading.Event)

    @property
    def ended(self) -> bool:
        return self.status in ENDED_STATUSES

    @property
    def deployment_type(self) -> str:
        return self.instance_type.get("deployment_type") or "vm"

    def json(self) -> dict[str, Any]:
        row = self.instance_type
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "gpu_type": row["gpu_type"],
            "gpu_count": row["gpu_count"],
            "cpu_cores": self.cpu_cores,
            "memory": self.memory,
            "storage": self.storage,
            "region": row["region"],
            "ip": self.ip,
            "ssh_port": self.ssh_port,
            "ssh_user": "root",
            "os_image": self.template or "ubuntu-22.04-cuda-12.4",
            "cost_per_hour": row["hourly_rate"],
            "deployed_at": iso(self.deployed_at),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "max_runtime_minutes": self.max_runtime_minutes,
            "idle_shutdown_minutes": self.idle_shutdown_minutes,
            "auto_stop_at": iso(self.auto_stop_at),
            "stop_reason": self.stop_reason,
            "deployment_type": self.deployment_type,
            "instance_type_id": row["id"],
            "ssh_key_id": self.ssh_key_id,
            "template": self.template,
        }


class InstanceFleet:
    def __init__(
        self,
        settings: Settings,
        instance_types,
        capacity: Capacity,
        ssh_keys: SshKeyStore,
        ssh_hub: SshHub,
        workspace_root: Path,
    ) -> None:
        self._settings = settings
        self._instance_types = instance_types
        self._capacity = capacity
        self._ssh_keys = ssh_keys
        self._hub = ssh_hub
        self._root = workspace_root
        self.lock = threading.RLock()
        self.instances: dict[str, Instance] = {}
        self._lifecycles: list[threading.Thread] = []

    # ── create ────────────────────────────────────────────────────────────────

    def create(self, body: dict[str, Any]) -> Instance:
        name = check.text(body, "name")
        if not name:
            raise invalid("name", "is required")
        key_id = check.text(body, "ssh_key_id")
        if not key_id:
            raise invalid("ssh_key_id", "is required")
        if self._ssh_keys.get(key_id) is None:
            raise ApiError(400, "invalid_ssh_key", f"SSH key {key_id!r} does not exist", {"field": "ssh_key_id"})
        gpu_count = check.integer(body, "gpu_count", 1, 8, default=None)
        cpu_cores = check.integer(body, "cpu_cores", 1, 1024, default=None)
        memory = check.integer(body, "memory", 1, 16384, default=None)
        storage = check.integer(body, "storage", 1, 100000, default=None)
        max_runtime = check.integer(body, "max_runtime_minutes", 5, 10080, default=None)
        idle = check.integer(body, "idle_shutdown_minutes", 5, 1440, default=None)
        env = _env_vars(body.get("env_vars"))
        script = _launch_script(body)
        row = self._choose_type(body, gpu_count)
        if not self._capacity.available(row["gpu_type"]):
            raise ApiError(503, "no_capacity", f"No {row['gpu_type']} capacity right now; nothing was launched")
        instance_id = f"inst_{secrets.token_hex(8)}"
        home = self._root / instance_id
        home.mkdir(parents=True)
        instance = Instance(
            id=instance_id,
            name=name,
            ssh_key_id=key_id,
            instance_type=dict(row),
            home=home,
            env=env,
            launch_script=script,
            cpu_cores=cpu_cores or row["cpu_cores"],
            memory=memory or int(row["memory_gb"]),
            storage=storage or int(row["storage_gb"]),
            template=check.text(body, "template"),
            max_runtime_minutes=max_runtime,
            idle_shutdown_minutes=idle,
        )
        lifecycle = threading.Thread(target=self._live, args=(instance,), name=f"fake-runcrate-{instance_id}",
                                     daemon=True)
        with self.lock:
            self.instances[instance_id] = instance
            self._lifecycles.append(lifecycle)
        lifecycle.start()
        return instance

    def _choose_type(self, body: dict[str, Any], gpu_count: int | None) -> dict[str, Any]:
        types = self._instance_types()
        type_id = check.text(body, "instance_type_id")
        region = check.text(body, "region")
        if type_id is not None:
            row = next((r for r in types if r["id"] == type_id), None)
            if row is None:
                raise ApiError(400, "instance_type_unavailable",
                               f"Instance type {type_id!r} is no longer available")
            return row
        requested = check.text(body, "gpu_type")
        if requested is None:
            raise invalid("gpu_type", "gpu_type or instance_type_id is required")
        gpu = canonical_gpu(requested, types)
        if gpu is None:
            raise ApiError(400, "gpu_type_unavailable", f"GPU type {requested!r} is no longer available")
        rows = matching_rows(types, gpu, gpu_count or 1, region)
        if not rows:
            where = f" in {region}" if region else ""
            raise ApiError(400, "gpu_type_unavailable",
                           f"{gpu} x{gpu_count or 1}{where} is no longer available")
        return min(rows, key=lambda r: r["hourly_rate"])

    # ── reading ───────────────────────────────────────────────────────────────

    def get(self, id_or_name: str, *, by_name: bool = False) -> Instance:
        with self.lock:
            instance = self.instances.get(id_or_name)
            if instance is None and by_name:
                named = [i for i in self.instances.values() if i.name == id_or_name]
                if len(named) > 1:
                    raise conflict(f"{len(named)} instances are named {id_or_name!r}: use the id")
                instance = named[0] if named else None
        if instance is None:
            raise not_found("instance", id_or_name)
        return instance

    def listing(self, search: str | None) -> list[dict[str, Any]]:
        with self.lock:
            found = sorted(self.instances.values(), key=lambda i: i.created_at, reverse=True)
            return [i.json() for i in found if not search or search.lower() in i.name.lower()]

    def json(self, instance: Instance) -> dict[str, Any]:
        with self.lock:
            return instance.json()

    # ── changes ───────────────────────────────────────────────────────────────

    def update(self, id_or_name: str, body: dict[str, Any]) -> Instance:
        instance = self.get(id_or_name, by_name=True)
        if "max_runtime_minutes" not in body and "idle_shutdown_minutes" not in body:
            raise invalid("max_runtime_minutes", "pass max_runtime_minutes, idle_shutdown_minutes or both")
        max_runtime = check.integer(body, "max_runtime_minutes", 5, 10080, default=None)
        idle = check.integer(body, "idle_shutdown_minutes", 5, 1440, default=None)
        with self.lock:
            if instance.ended:
                raise conflict(f"instance {instance.id} is {instance.status}", status=instance.status)
            if "max_runtime_minutes" in body:
                instance.max_runtime_minutes = max_runtime
            if "idle_shutdown_minutes" in body:
                instance.idle_shutdown_minutes = idle
            self._set_auto_stop(instance, at_least_minutes=2.0)
            instance.updated_at = utc_now()
        instance.wake.set()
        return instance

    def terminate(self, instance_id: str, *, status: str = "terminated", stop_reason: str = "user") -> None:
        instance = self.get(instance_id)
        with self.lock:
            if instance.ended:
                return
            _take(instance, status)
            instance.stop_reason = stop_reason
            instance.auto_stop_at = None
            port = instance.ssh_port
        instance.wake.set()
        for group in list(instance.process_groups):
            kill_group(group)
        kill_machine(instance.id)
        if port is not None:
            self._hub.close(port)
        if instance.launch_process is not None:
            instance.launch_process.wait()

    def stop(self) -> None:
        with self.lock:
            live = [i.id for i in self.instances.values() if not i.ended]
            lifecycles = list(self._lifecycles)
        for instance_id in live:
            self.terminate(instance_id, stop_reason="system")
        for lifecycle in lifecycles:
            lifecycle.join(timeout=10)

    # ── life ──────────────────────────────────────────────────────────────────

    def _live(self, instance: Instance) -> None:
        settings = self._settings
        ready_s = settings.container_ready_s if instance.deployment_type == "container" else settings.vm_ready_real_s
        if not self._hold(instance, ready_s * 0.25):
            return
        self._set_status(instance, "deploying")
        if settings.ssh_early and not self._become_reachable(instance, "deploying"):
            return
        if not self._hold(instance, ready_s * 0.75):
            return
        if not self._become_reachable(instance, "running"):
            return
        self._start_launch_script(instance)
        while not instance.ended:
            instance.wake.clear()
            with self.lock:
                stop_at = instance.auto_stop_at
            left = None if stop_at is None else (stop_at - utc_now()).total_seconds()
            if left is not None and left <= 0:
                self.terminate(instance.id, stop_reason="max_runtime")
                return
            instance.wake.wait(left)

    def _hold(self, instance: Instance, seconds: float) -> bool:
        """Waits ``seconds`` unless the instance ends first; whether it is still live."""
        deadline = time.monotonic() + seconds
        while not instance.ended:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            instance.wake.wait(left)
            instance.wake.clear()
        return False

    def _set_status(self, instance: Instance, status: str) -> None:
        with self.lock:
            if not instance.ended:
                _take(instance, status)

    def _set_auto_stop(self, instance: Instance, *, at_least_minutes: float = 0.0) -> None:
        if instance.running_since is None or instance.max_runtime_minutes is None:
            instance.auto_stop_at = None
            return
        ran_s = time.monotonic() - instance.running_since
        left_s = self._settings.runtime_minutes(instance.max_runtime_minutes) - ran_s
        left_s = max(left_s, self._settings.runtime_minutes(at_least_minutes))
        instance.auto_stop_at = utc_now() + timedelta(seconds=left_s)

    def _become_reachable(self, instance: Instance, status: str) -> bool:
        """Moves to ``status`` with ip and ssh_port set, its sshd already listening; False if it ended."""
        port = instance.ssh_port or self._hub.serve(self._ssh_target(instance))
        with self.lock:
            if not instance.ended:
                instance.ip, instance.ssh_port = "127.0.0.1", port
                _take(instance, status)
                if status == "running":
                    instance.deployed_at = instance.updated_at
                    instance.running_since = time.monotonic()
                    self._set_auto_stop(instance)
                return True
        self._hub.close(port)
        return False

    def _ssh_target(self, instance: Instance) -> SshTarget:
        registered = self._ssh_keys.get(instance.ssh_key_id)

        def accepts(offered) -> bool:
            if registered is None or not registered.matches(offered):
                return False
            registered.last_used = utc_now()
            return True

        return SshTarget(instance.id, instance.home, instance.env, accepts, instance.process_groups)

    def _start_launch_script(self, instance: Instance) -> None:
        if not instance.launch_script:
            return
        env = command_environment({**instance.env, "HOME": str(instance.home)}, machine_id=instance.id)
        with self.lock:
            if instance.ended:
                return
            with (instance.home / "launch.log").open("ab") as log:
                instance.launch_process = subprocess.Popen(
                    ["bash", "-c", instance.launch_script],
                    cwd=instance.home,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            instance.process_groups.add(instance.launch_process.pid)
        threading.Thread(target=self._reap_launch_script, args=(instance,), daemon=True).start()

    @staticmethod
    def _reap_launch_script(instance: Instance) -> None:
        assert instance.launch_process is not None
        instance.launch_exit_code = instance.launch_process.wait()


def _env_vars(value: Any) -> dict[str, str]:
    """``{"NAME": "value"}`` (what the SDK sends) or ``[{"key", "value"}]`` (the OpenAPI shape)."""
    if value is None:
        return {}
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    if isinstance(value, list) and all(
        isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("value"), str)
        for item in value
    ):
        return {item["key"]: item["value"] for item in value}
    raise invalid("env_vars", 'must be {"NAME": "value"} or [{"key": ..., "value": ...}]')


def _launch_script(body: dict[str, Any]) -> str | None:
    """Startup commands, then the launch script (plain or base64), as one bash script."""
    parts: list[str] = []
    commands = body.get("startup_commands")
    if commands is not None:
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise invalid("startup_commands", "must be a list of strings")
        parts.extend(commands)
    script = check.text(body, "launch_script")
    encoded = check.text(body, "launch_script_base64")
    if encoded is not None:
        try:
            script = base64.b64decode(encoded, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise invalid("launch_script_base64", "is not base64 of UTF-8 text") from None
    if script:
        parts.append(script)
    return "\n".join(parts) if parts else None


def _take(instance: Instance, status: str) -> None:
    """The instance moves to `status` now (the caller holds the lock): its status, history and updated_at."""
    instance.status = status
    instance.history.append((status, time.monotonic()))
    instance.updated_at = utc_now()
