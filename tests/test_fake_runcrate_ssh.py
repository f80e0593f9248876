"""Each running instance serves SSH on its ssh_port: registered key only, bash in the instance's home."""
# ruff: noqa: F811 - imported pytest fixtures reappear as test parameters

from __future__ import annotations

import asyncio

import asyncssh
import pytest
from fake_runcrate import FakeRuncrate
from fake_runcrate.pytest_fixtures import FAST, client, fake, running, wait_until  # noqa: F401 - pytest fixtures
from runcrate import Runcrate


@pytest.fixture
def key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


@pytest.fixture
def instance(client, key):
    registered = client.ssh_keys.create(name="launcher", public_key=key.export_public_key().decode())
    made = client.instances.create(name="box", ssh_key_id=registered.id, gpu_type="L40S", env_vars={"A": "1"})
    wait_until(lambda: client.instances.get_status(made.id).status == "running")
    return client.instances.get(made.id)


def _connect(instance, key):
    return asyncssh.connect(instance.ip, port=instance.model_extra["ssh_port"], username="root",
                            client_keys=[key], known_hosts=None)


async def _log_in(instance, key) -> None:
    async with _connect(instance, key):
        pass


def test_exec_with_the_registered_key_runs_bash_in_home(fake, instance, key):
    async def run() -> asyncssh.SSHCompletedProcess:
        async with _connect(instance, key) as conn:
            return await conn.run('echo "$HOME|$(pwd)|$A"; echo oops >&2; exit 4')

    result = asyncio.run(run())
    home = str(fake.instances[instance.id].home)
    assert result.stdout == f"{home}|{home}|1\n"
    assert (result.stderr, result.exit_status) == ("oops\n", 4)


def test_an_unregistered_key_is_refused(instance):
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    with pytest.raises(asyncssh.PermissionDenied):
        asyncio.run(_log_in(instance, stranger))


def test_stdin_and_sftp_work_relative_to_home(fake, instance, key):
    async def run() -> str:
        async with _connect(instance, key) as conn:
            async with conn.start_sftp_client() as sftp, sftp.open("plan.json", "wb") as remote:
                await remote.write(b"{}")
            return (await conn.run("cat plan.json; cat", input="+stdin")).stdout

    assert asyncio.run(run()) == "{}+stdin"
    assert (fake.instances[instance.id].home / "plan.json").read_bytes() == b"{}"


def test_terminate_kills_its_processes_and_closes_ssh(client, instance, key):
    async def start_background() -> int:
        async with _connect(instance, key) as conn:
            result = await conn.run("setsid nohup sleep 60 >/dev/null 2>&1 & echo $!")
            return int(result.stdout)

    pid = asyncio.run(start_background())
    assert running(pid)  # still running after the session ended
    client.instances.terminate(instance.id)
    wait_until(lambda: not running(pid))
    with pytest.raises(OSError):
        asyncio.run(_log_in(instance, key))


def test_with_ssh_early_sshd_answers_while_still_deploying(key):
    with FakeRuncrate(**{**FAST, "container_ready_s": 2.0, "ssh_early": True}) as early, \
            Runcrate(api_key=early.api_key, base_url=early.base_url) as sdk:
        registered = sdk.ssh_keys.create(name="k", public_key=key.export_public_key().decode())
        made = sdk.instances.create(name="box", ssh_key_id=registered.id, gpu_type="A4000")
        deploying = wait_until(lambda: (i := sdk.instances.get(made.id)).model_extra["ssh_port"] and i)
        assert deploying.status == "deploying"
        asyncio.run(_log_in(deploying, key))
        assert sdk.instances.get(made.id).status == "deploying"
