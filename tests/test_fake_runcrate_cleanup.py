"""stop() leaves nothing behind: no job command, instance process, sshd or thread."""

from __future__ import annotations

import asyncio
import threading

import asyncssh
from fake_runcrate import FakeRuncrate
from fake_runcrate.pytest_fixtures import FAST, running, wait_until
from runcrate import Runcrate


def _fake_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("fake-runcrate")]


def test_stop_kills_everything_it_started():
    key = asyncssh.generate_private_key("ssh-ed25519")
    fake = FakeRuncrate(**FAST).start()
    with Runcrate(api_key=fake.api_key, base_url=fake.base_url) as sdk:
        job = sdk.jobs.run(command='echo "$$" > pid; exec sleep 60', gpu_type="A4000", max_runtime_minutes=600)
        registered = sdk.ssh_keys.create(name="k", public_key=key.export_public_key().decode())
        made = sdk.instances.create(name="box", ssh_key_id=registered.id, gpu_type="L40S",
                                    launch_script='echo "$$" > launch.pid; exec sleep 60')
        wait_until(lambda: sdk.instances.get_status(made.id).status == "running")
        port = sdk.instances.get(made.id).model_extra["ssh_port"]
        workspace = wait_until(lambda: fake.jobs[job.id].attempt.workspace)
        home = fake.instances[made.id].home
        job_pid = int(wait_until(lambda: (workspace / "pid").exists() and (workspace / "pid").read_text()))
        launch_pid = int(wait_until(lambda: (home / "launch.pid").exists() and (home / "launch.pid").read_text()))
        held = threading.Thread(target=lambda: sdk.jobs.logs(job.id, follow=True), daemon=True)
        held.start()  # a follow read held open while the fake stops
        assert running(job_pid) and running(launch_pid) and _fake_threads()

        fake.stop()

    held.join(timeout=5)
    assert not held.is_alive()
    assert not running(job_pid) and not running(launch_pid)
    assert _fake_threads() == []
    assert not workspace.exists()

    async def log_in() -> None:
        async with asyncssh.connect("127.0.0.1", port=port, username="root", client_keys=[key], known_hosts=None):
            pass

    try:
        asyncio.run(log_in())
    except OSError:
        pass
    else:
        raise AssertionError("the sshd still answers after stop()")
