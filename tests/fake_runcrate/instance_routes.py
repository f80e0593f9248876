"""HTTP handlers for /api/v1/instances, /api/v1/instances/types and /api/v1/ssh-keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .catalogue import canonical_gpu, region_matches
from .instances import InstanceFleet
from .routing import Request, Router
from .ssh_keys import SshKeyStore
from .wire import Response, no_content, not_found, ok

_INSTANCE = r"/api/v1/instances/(?P<instance_id>[^/]+)"


class InstanceRoutes:
    def __init__(
        self, fleet: InstanceFleet, ssh_keys: SshKeyStore, instance_types: Callable[[], list[dict[str, Any]]]
    ) -> None:
        self._fleet = fleet
        self._keys = ssh_keys
        self._types = instance_types

    def register(self, router: Router) -> None:
        router.add("GET", r"/api/v1/instances/types", self.list_types)
        router.add("POST", r"/api/v1/instances", self.create)
        router.add("GET", r"/api/v1/instances", self.list)
        router.add("GET", _INSTANCE, self.get)
        router.add("GET", _INSTANCE + "/status", self.status)
        router.add("PATCH", _INSTANCE, self.update)
        router.add("DELETE", _INSTANCE, self.terminate)
        router.add("GET", r"/api/v1/ssh-keys", self.list_keys)
        router.add("POST", r"/api/v1/ssh-keys", self.create_key)
        router.add("GET", r"/api/v1/ssh-keys/(?P<key_id>[^/]+)", self.get_key)
        router.add("DELETE", r"/api/v1/ssh-keys/(?P<key_id>[^/]+)", self.delete_key)

    def list_types(self, request: Request) -> Response:
        types = self._types()
        rows = list(types)
        if request.arg("gpu_type"):
            gpu = canonical_gpu(request.arg("gpu_type"), types)
            rows = [r for r in rows if r["gpu_type"] == gpu]
        if request.arg("region"):
            rows = [r for r in rows if region_matches(request.arg("region"), r["region"])]
        if request.arg("gpu_count"):
            count = request.int_arg("gpu_count", 1, 1, 8)
            rows = [r for r in rows if r["gpu_count"] == count]
        return ok(rows)

    def create(self, request: Request) -> Response:
        # Not deduplicated by Idempotency-Key: the real server ignores the key here too.
        instance = self._fleet.create(request.json())
        return ok(self._fleet.json(instance), status=201)

    def list(self, request: Request) -> Response:
        return ok(self._fleet.listing(request.arg("search")))

    def get(self, request: Request, instance_id: str) -> Response:
        return ok(self._fleet.json(self._fleet.get(instance_id)))

    def status(self, request: Request, instance_id: str) -> Response:
        data = self._fleet.json(self._fleet.get(instance_id))
        return ok({"id": data["id"], "status": data["status"], "ip": data["ip"], "ssh_port": data["ssh_port"]})

    def update(self, request: Request, instance_id: str) -> Response:
        return ok(self._fleet.json(self._fleet.update(instance_id, request.json())))

    def terminate(self, request: Request, instance_id: str) -> Response:
        self._fleet.terminate(instance_id)
        return no_content()

    def list_keys(self, request: Request) -> Response:
        return ok(self._keys.listing())

    def create_key(self, request: Request) -> Response:
        return ok(self._keys.create(request.json()).json(), status=201)

    def get_key(self, request: Request, key_id: str) -> Response:
        key = self._keys.get(key_id)
        if key is None:
            raise not_found("ssh key", key_id)
        return ok(key.json())

    def delete_key(self, request: Request, key_id: str) -> Response:
        self._keys.delete(key_id)
        return no_content()
