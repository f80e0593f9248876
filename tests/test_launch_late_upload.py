"""The S3 store goes away after the job finished: the launcher keeps everything locally, exits with
its upload code (5, launcher trouble: results kept locally), and `gpubench upload` sends the run
later, verified, once the store is back."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from urllib.parse import urlparse

import pytest
import test_launch_support as support
from clirun import gpubench
from test_launch_support import launch, run_folders

fake, launcher_env = support.fake, support.launcher_env

# The store as the launcher sees it: a TCP relay to the test S3 server, in its own process, so that
# the job can make the store vanish (kill the relay) as its last act, after its records.
RELAY = r'''
import asyncio, sys
host, port = sys.argv[1], int(sys.argv[2])
async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()
async def serve(reader, writer):
    up_reader, up_writer = await asyncio.open_connection(host, port)
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
'''


@pytest.fixture
def relay(s3):
    target = urlparse(s3.endpoint)
    proc = subprocess.Popen([sys.executable, "-c", RELAY, target.hostname, str(target.port)], stdout=subprocess.PIPE,
                            text=True)
    port = int(proc.stdout.readline())
    yield proc, f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("fake", [{"minute_s": 1.0}], indirect=True)
def test_store_gone_after_the_job_keeps_results_and_uploads_later(
        fake, launcher_env, s3, s3_bucket, s3_env, relay, capsys, tmp_path, monkeypatch):
    proc, endpoint = relay
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    command = f"{support.emitter_command()} && kill {proc.pid}"
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", "--store", f"s3://{s3_bucket}/runs",
                    "--job-command", command)
    with pytest.raises(OSError):  # the store really is gone
        socket.create_connection(("127.0.0.1", urlparse(endpoint).port), timeout=1).close()

    assert result.code == 5, result.stderr
    assert "gpubench upload" in result.stderr  # says how to send it later
    [folder] = run_folders(tmp_path)
    kinds = [json.loads(line)["kind"] for line in (folder / "results.jsonl").read_text().splitlines()]
    assert kinds.count("result") == 2 and kinds[-1] == "run_finished"
    assert (folder / "job.json").is_file() and (folder / "run.log").is_file()
    assert json.loads((folder / "upload.json").read_text())["status"] == "pending"
    [job] = fake.jobs.values()
    assert job.status == "succeeded"

    # The store is reachable again (its real address): the pending run goes, as it was kept.
    sent = gpubench("upload", "--results-dir", str(folder.parent), cwd=tmp_path, env=s3_env)
    assert sent.code == 0, sent.stderr
    assert json.loads((folder / "upload.json").read_text())["status"] == "done"
    listed = s3.client().list_objects_v2(Bucket=s3_bucket, Prefix=f"runs/{folder.name}/")
    names = {o["Key"].rsplit("/", 1)[1] for o in listed.get("Contents", [])}
    assert {"results.jsonl", "run.log", "config.json", "job.json"} <= names
