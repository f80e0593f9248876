"""A dropped SSH connection on the instance path: the launcher reconnects and reads each output file
on from its last byte, so no line is lost or repeated; the command itself never stopped."""

from __future__ import annotations

import json
import threading

import pytest
import test_launch_support as support
from test_launch_support import emitter_command, launch, run_folders, wait_for

fake, launcher_env = support.fake, support.launcher_env


def drop_ssh_connections(fake, port: int) -> int:
    """Close every live SSH connection of one instance's sshd (its listener stays up)."""
    hub = fake._ssh_hub
    connections = list(hub._listeners[port].connections)

    async def close_all() -> None:
        for connection in connections:
            connection.close()

    hub._call(close_all())
    return len(connections)


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_ssh_drop_mid_stream(fake, launcher_env, capsys, tmp_path):
    dropped = {}

    def drop_when_streaming():
        instance = wait_for(lambda: next(iter(fake.instances.values()), None), what="an instance")
        out = lambda: next(iter(instance.home.glob("gpubench/*/stdout.log")), None)  # noqa: E731
        wait_for(lambda: out() is not None and out().stat().st_size > 4000, what="output on the instance")
        dropped["connections"] = drop_ssh_connections(fake, instance.ssh_port)
        resume.touch()

    # the command pauses after its first setup until the drop is done, so the readers are mid-stream when it comes
    # (a 0.4 s pause was once not enough: the command ended first and nothing had to reconnect)
    resume = tmp_path / "dropped"
    threading.Thread(target=drop_when_streaming, daemon=True).start()
    result = launch(capsys, "train-compile", "--via", "instance", "--gpu", "L40S",
                    "--job-command", emitter_command(lines=300, pause_until=str(resume)))
    assert result.code == 0, result.stderr
    assert dropped["connections"] >= 1
    [folder] = run_folders(tmp_path)
    text = [line for line in (folder / "run.log").read_text().splitlines() if line.startswith("line ")]
    assert [line.rsplit(" ", 1)[0] for line in text] == [
        f"line {s} {n}" for s in ("eager-sdpa", "compile-sdpa") for n in range(300)]
    kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
    assert kinds == ["run_started", "progress", "result", "progress", "result", "run_finished"]
    assert json.loads((folder / "job.json").read_text())["ssh_reconnects"] >= 1
