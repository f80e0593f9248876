"""Instances: catalogue, lifecycle by deployment type, launch script, auto stop, terminate, SSH keys."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import time
from datetime import UTC, datetime

import asyncssh
import httpx
import pytest
import runcrate
from fake_runcrate import FakeRuncrate
from fake_runcrate.pytest_fixtures import FAST, client, fake, wait_until  # noqa: F401 - pytest fixtures
from runcrate import Runcrate


@pytest.fixture
def key_id(client) -> str:
    public = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    return client.ssh_keys.create(name="launcher", public_key=public).id


def _statuses_until_running(client, instance_id: str) -> list[str]:
    seen: list[str] = []
    while not seen or seen[-1] != "running":
        status = client.instances.get_status(instance_id)
        if not seen or status.status != seen[-1]:
            seen.append(status.status)
            assert (status.ip is not None) == (status.status == "running")
        time.sleep(0.01)
    return seen


def test_the_catalogue_has_containers_and_vms_and_filters(client):
    types = client.instances.list_types()
    gpus = {t.gpu_type for t in types}
    assert {"L40S", "A100-80GB", "H100", "RTX5090", "A4000"} <= gpus
    assert {t.deployment_type for t in types} == {"container", "vm"}
    assert {t.gpu_type for t in client.instances.list_types(gpu_type="h100-sxm")} == {"H100"}
    assert all(t.region.startswith("us-east") for t in client.instances.list_types(region="us-east"))


def test_a_container_runs_within_its_delay_and_gets_ip_and_ssh_port(fake, client, key_id):
    instance = client.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S")
    assert instance.status == "creating" and instance.ip is None
    seen = _statuses_until_running(client, instance.id)
    history = fake.instances[instance.id].history
    assert [status for status, _ in history] == ["creating", "deploying", "running"]
    # A poll can miss a short phase on a busy machine, never reorder or invent one.
    assert seen[-1] == "running" and seen == [s for s, _ in history if s in seen]
    (_, created), (_, deploying), (_, running_at) = history
    ready_s = FAST["container_ready_s"]
    assert deploying - created >= ready_s * 0.25 and running_at - created >= ready_s
    running = client.instances.get(instance.id)
    assert running.ip == "127.0.0.1" and running.model_extra["ssh_port"] > 0
    assert running.deployed_at is not None


def test_a_vm_takes_longer_than_a_container(client, key_id):
    container = client.instances.create(name="c", ssh_key_id=key_id, gpu_type="A4000")
    vm = client.instances.create(name="v", ssh_key_id=key_id, gpu_type="H100")
    wait_until(lambda: client.instances.get_status(container.id).status == "running")
    assert client.instances.get_status(vm.id).status != "running"
    wait_until(lambda: client.instances.get_status(vm.id).status == "running")


def test_the_launch_script_runs_in_home_with_env_vars(fake, client, key_id):
    script = 'echo "home=$HOME pwd=$(pwd) token=$TOKEN"; touch started'
    instance = client.instances.create(name="box", ssh_key_id=key_id, gpu_type="L40S", launch_script=script,
                                       startup_commands=["echo first"], env_vars={"TOKEN": "t1"})
    state = fake.instances[instance.id]
    wait_until(lambda: state.launch_exit_code is not None)
    home = state.home
    assert (home / "launch.log").read_text() == f"first\nhome={home} pwd={home} token=t1\n"
    assert (home / "started").exists()


def test_env_vars_as_a_key_value_list_are_accepted(fake, key_id):
    body = {"name": "box", "ssh_key_id": key_id, "gpu_type": "A4000",
            "env_vars": [{"key": "A", "value": "1"}]}
    answer = httpx.post(f"{fake.base_url}/api/v1/instances", json=body,
                        headers={"Authorization": f"Bearer {fake.api_key}"})
    assert answer.status_code == 201
    assert fake.instances[answer.json()["data"]["id"]].env == {"A": "1"}


def test_create_validates_its_fields(client, key_id):
    with pytest.raises(runcrate.UnprocessableEntityError):
        client.instances.create(name="box", ssh_key_id=key_id, gpu_type="A4000", max_runtime_minutes=4)
    with pytest.raises(runcrate.BadRequestError):
        client.instances.create(name="box", ssh_key_id="key_unknown", gpu_type="A4000")


def test_max_runtime_stops_it_and_patch_moves_auto_stop(client, key_id):
    instance = client.instances.create(name="box", ssh_key_id=key_id, gpu_type="A4000", max_runtime_minutes=5)
    wait_until(lambda: client.instances.get_status(instance.id).status == "running")
    first_stop = client.instances.get(instance.id).auto_stop_at
    later = client.instances.update("box", max_runtime_minutes=12)  # by unique name
    assert later.auto_stop_at > first_stop
    stopped = wait_until(lambda: (i := client.instances.get(instance.id)).status == "terminated" and i)
    assert stopped.stop_reason == "max_runtime"
    with pytest.raises(runcrate.ConflictError):
        client.instances.update(instance.id, max_runtime_minutes=60)


def test_max_runtime_counts_on_the_runtime_clock_where_one_is_set():
    """runtime_minute_s: an instance's max_runtime_minutes counts its own minutes (here 1 s), not billing's 0.05 s."""
    with FakeRuncrate(**{**FAST, "runtime_minute_s": 1.0}) as slow_net, \
            Runcrate(api_key=slow_net.api_key, base_url=slow_net.base_url) as sdk:
        public = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
        key = sdk.ssh_keys.create(name="launcher", public_key=public).id
        instance = sdk.instances.create(name="box", ssh_key_id=key, gpu_type="A4000", max_runtime_minutes=5)
        wait_until(lambda: sdk.instances.get_status(instance.id).status == "running")
        left_s = (sdk.instances.get(instance.id).auto_stop_at - datetime.now(UTC)).total_seconds()
        assert 2.5 < left_s <= 5.0  # 5 runtime minutes of 1 s from running (billing's would be 0.25 s)
        sdk.instances.terminate(instance.id)


def test_terminate_leaves_it_terminated_in_the_list(client, key_id):
    instance = client.instances.create(name="box", ssh_key_id=key_id, gpu_type="A4000")
    client.instances.terminate(instance.id)
    assert [(i.id, i.status, i.stop_reason) for i in client.instances.list()] == [
        (instance.id, "terminated", "user")]


def test_a_lost_instance_reads_failed_with_a_stop_reason(fake, client, key_id):
    instance = client.instances.create(name="box", ssh_key_id=key_id, gpu_type="A4000")
    wait_until(lambda: client.instances.get_status(instance.id).status == "running")
    fake.lose_instance(instance.id)
    lost = client.instances.get(instance.id)
    assert (lost.status, lost.stop_reason) == ("failed", "failed")


def test_ssh_keys_crud_and_duplicates_are_409(client):
    public = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    key = client.ssh_keys.create(name="a", public_key=public)
    assert key.fingerprint.startswith("SHA256:") and key.created_at is not None
    with pytest.raises(runcrate.ConflictError):
        client.ssh_keys.create(name="b", public_key=public)
    assert [k.id for k in client.ssh_keys.list()] == [key.id]
    client.ssh_keys.delete(key.id)
    assert client.ssh_keys.list() == []
