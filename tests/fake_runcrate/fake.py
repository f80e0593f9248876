"""FakeRuncrate: the whole fake behind one object, for tests to start, steer and inspect."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from .artifacts import SignedUrls
from .catalogue import Capacity, canonical_gpu, default_instance_types
from .faults import FaultPlan
from .idempotency import IdempotencyKeys
from .instance_routes import InstanceRoutes
from .instances import Instance, InstanceFleet
from .job_routes import JobRoutes
from .job_state import Job, JobGroup
from .jobs import JobBoard
from .routing import Router
from .server import ApiServer, RecordedRequest
from .settings import Settings
from .ssh_keys import RegisteredKey, SshKeyStore
from .sshd import SshHub
from .uploads import UploadStore


class FakeRuncrate:
    """A local Runcrate API that the unmodified ``runcrate-sdk`` 0.5.0 cannot tell from the real one.

    Every API "minute" (max_runtime_minutes, capacity_wait_minutes, a VM's start-up) lasts
    ``minute_s`` real seconds, and billing counts API time; a job's or an instance's ``max_runtime_minutes``
    counts ``runtime_minute_s`` a minute where that is given. ``run_images``: a job whose image the
    local Docker engine has runs in it; off, every job runs with bash (the host's gpubench), whatever
    images this machine happens to hold.
    """

    def __init__(
        self,
        api_key: str = "rc_live_test",
        minute_s: float = 60.0,
        follow_hold_s: float = 25.0,
        workspace_root: str | Path | None = None,
        *,
        queue_s: float = 0.2,
        start_s: float = 0.2,
        container_ready_s: float = 4.0,
        vm_ready_s: float | None = None,
        capacity_poll_minutes: float = 0.5,
        idempotency_ttl_s: float = 24 * 3600.0,
        log_cap_bytes: int = 10 * 1024 * 1024,
        ssh_early: bool = False,
        run_images: bool = False,
        runtime_minute_s: float | None = None,
    ) -> None:
        if not api_key.startswith("rc_live_"):
            raise ValueError("Runcrate API keys start with 'rc_live_' (the SDK refuses any other)")
        self._owns_root = workspace_root is None
        root = Path(tempfile.mkdtemp(prefix="fake-runcrate-")) if workspace_root is None else Path(workspace_root)
        root.mkdir(parents=True, exist_ok=True)
        self.workspace_root = root
        self.settings = Settings(
            api_key=api_key,
            minute_s=minute_s,
            runtime_minute_s=runtime_minute_s,
            follow_hold_s=follow_hold_s,
            queue_s=queue_s,
            start_s=start_s,
            container_ready_s=container_ready_s,
            vm_ready_s=vm_ready_s,
            capacity_poll_minutes=capacity_poll_minutes,
            idempotency_ttl_s=idempotency_ttl_s,
            log_cap_bytes=log_cap_bytes,
            ssh_early=ssh_early,
            workspace_root=root,
            run_images=run_images,
        )
        self.instance_types: list[dict[str, Any]] = default_instance_types()
        self._capacity = Capacity()
        self._faults = FaultPlan()
        self._server: ApiServer | None = None
        self._stopped = False
        signed_urls = SignedUrls()
        uploads = UploadStore(lambda: self.base_url)
        self._ssh_keys = SshKeyStore()
        self._ssh_hub = SshHub()
        self._board = JobBoard(self.settings, lambda: self.instance_types, self._capacity, uploads,
                               signed_urls, root / "jobs")
        self._fleet = InstanceFleet(self.settings, lambda: self.instance_types, self._capacity,
                                    self._ssh_keys, self._ssh_hub, root / "instances")
        self._router = Router()
        JobRoutes(self._board, IdempotencyKeys(idempotency_ttl_s), uploads, signed_urls,
                  self.settings).register(self._router)
        InstanceRoutes(self._fleet, self._ssh_keys, lambda: self.instance_types).register(self._router)

    # ── running ───────────────────────────────────────────────────────────────

    def start(self) -> FakeRuncrate:
        if self._server is not None:
            raise RuntimeError("already started")
        self._server = ApiServer(self._router, self._faults, self.settings.api_key)
        self._server.start()
        return self

    def stop(self) -> None:
        """Stops serving, kills every job command and instance process, stops the sshds."""
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._server is not None:
                self._server.stop_accepting()
            self._board.stop()
            self._fleet.stop()
            if self._server is not None:
                self._server.close_everything()
            self._ssh_hub.stop()
        finally:
            if self._owns_root:
                shutil.rmtree(self.workspace_root, ignore_errors=True)

    def __enter__(self) -> FakeRuncrate:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The origin to give the SDK: ``Runcrate(api_key=..., base_url=fake.base_url)``."""
        if self._server is None:
            raise RuntimeError("start() the fake first")
        return self._server.base_url

    @property
    def api_key(self) -> str:
        return self.settings.api_key

    # ── inspecting ────────────────────────────────────────────────────────────

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._server.requests if self._server is not None else []

    @property
    def jobs(self) -> dict[str, Job]:
        return self._board.jobs

    @property
    def job_groups(self) -> dict[str, JobGroup]:
        return self._board.groups

    @property
    def instances(self) -> dict[str, Instance]:
        return self._fleet.instances

    @property
    def ssh_keys(self) -> dict[str, RegisteredKey]:
        return self._ssh_keys.keys

    @property
    def ssh_host_public_key(self) -> str:
        """The OpenSSH public host key every instance's sshd presents."""
        return self._ssh_hub.host_public_key

    # ── steering ──────────────────────────────────────────────────────────────

    def inject(
        self,
        method: str,
        path_pattern: str,
        status: int | None,
        *,
        times: int | None = 1,
        code: str | None = None,
        message: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        after_action: bool = False,
        drop: bool = False,
    ) -> None:
        """The next ``times`` requests (None: until ``clear_faults``) whose method matches (``*``: any)
        and whose path (no query) ``re.fullmatch``es ``path_pattern`` answer ``status`` with an error
        envelope, after sleeping ``delay_s``.

        ``after_action``: the real action happens first (the job IS created), then the error.
        ``drop``: the connection is closed with no answer at all (with ``after_action``: after acting).
        ``status=None``: no error, the route is only slow (``delay_s`` spent while acting; a submit
        holds its Idempotency-Key meanwhile) and/or dropped.
        """
        self._faults.add(method, path_pattern, status, times=times, code=code, message=message,
                         details=details, headers=headers, delay_s=delay_s, after_action=after_action,
                         drop=drop)

    def clear_faults(self) -> None:
        self._faults.clear()

    def set_capacity(self, gpu_type: str, available: bool) -> None:
        """Whether new jobs/instances can get ``gpu_type`` now (queued jobs look again at once)."""
        gpu = canonical_gpu(gpu_type, self.instance_types)
        if gpu is None:
            raise ValueError(f"unknown GPU type {gpu_type!r}")
        self._capacity.set(gpu, available)

    def fail_machine(self, job_id: str) -> None:
        """The job's machine dies now; returns once the job has retried or failed."""
        self._board.fail_machine(job_id)

    def lose_instance(self, instance_id: str, *, status: str = "failed", stop_reason: str = "failed") -> None:
        """The instance is lost: it moves to ``status`` with ``stop_reason``, its processes and sshd die."""
        self._fleet.terminate(instance_id, status=status, stop_reason=stop_reason)
