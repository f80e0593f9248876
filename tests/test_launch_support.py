"""Shared helpers for the launcher tests (no tests here): the fake Runcrate started fast, the
launcher run in-process or as a subprocess, and a job command that prints valid records.

Import what a test needs: `from test_launch_support import fake, launcher_env, launch, emitter_command`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_runcrate import FakeRuncrate

API_KEY = "rc_live_launcher-test-key-5f3a9c1e77"
BIN = Path(sys.executable).parent
FAST = {
    "minute_s": 0.05,
    # A job's safety net (max_runtime_minutes) counts real minutes: a real workload on busy cores is never cut by
    # it, while billing, queues and capacity waits run on the fast clock. No launcher test waits for it to fire.
    "runtime_minute_s": 60.0,
    "follow_hold_s": 1.0,
    "queue_s": 0.05,
    "start_s": 0.05,
    "container_ready_s": 0.2,
    "vm_ready_s": 0.4,
}
LAUNCHER_PACE = {
    "GPUBENCH_POLL_S": "0.1",
    "GPUBENCH_STREAM_GAP_S": "0.02",
    "GPUBENCH_SSH_RETRY_S": "0.1",
    "GPUBENCH_CONFIRM_TIMEOUT_S": "20",
    "GPUBENCH_DRAIN_TIMEOUT_S": "10",
}


@pytest.fixture
def fake(request):
    """The fake, fast; `@pytest.mark.parametrize("fake", [{"minute_s": 5}], indirect=True)` changes it."""
    with FakeRuncrate(api_key=API_KEY, **{**FAST, **getattr(request, "param", {})}) as running:
        yield running


@pytest.fixture
def launcher_env(fake, monkeypatch, tmp_path):
    """The process environment of an in-process launcher pointed at the fake, in its own folder (and at no Slurm
    cluster or Docker host that `status` or `cleanup` would also ask)."""
    for name in [k for k in os.environ if k.startswith(("GPUBENCH_", "RUNCRATE_")) or k in ("DOCKER_HOST",
                                                                                               "SLURM_CONF")]:
        monkeypatch.delenv(name)
    env = {"RUNCRATE_API_KEY": API_KEY, "RUNCRATE_BASE_URL": fake.base_url,
           "GPUBENCH_STATE_DIR": str(tmp_path / "state"), **LAUNCHER_PACE}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return env


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]


def launch(capsys, *args: str) -> Result:
    """`gpubench-launch ARGS` in this process; its exit code and output."""
    from gpubench.launcher.cli import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return Result(code, out, err)


def launcher_process(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """`gpubench-launch ARGS` as its own process (for signals and crashes)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GPUBENCH_", "RUNCRATE_"))}
    clean.update(env)
    return subprocess.Popen([str(BIN / "gpubench-launch"), *args], cwd=cwd, env=clean, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


EMITTER = r'''
import json, os, sys, time
from gpubench.schema import (Environment, Metric, Progress, RunFinished, RunStarted, SetupResult,
                             summarize_results, to_line)
spec = json.loads(sys.argv[1])
rid = os.environ["GPUBENCH_RUN_ID"]
def say(text, stream=sys.stdout):  # one write per line, newline included, as gpubench's own output does
    stream.write(text + "\n")
    stream.flush()
def emit(record):
    say(to_line(record))
def wait_for_file(path, seconds):  # until the test writes `path` (None: the whole time) or the time is up
    deadline = time.time() + seconds
    while time.time() < deadline and not (path and os.path.exists(path)):
        time.sleep(0.05)
env = Environment(python="3", platform="test", launcher=os.environ.get("GPUBENCH_LAUNCHER"),
                  gpu_requested=os.environ.get("GPUBENCH_GPU_REQUESTED"))
emit(RunStarted(run_id=rid, workload="train-compile", study="s", setups=spec["setups"], repeats=1,
                smoke=True, config={}, environment=env))
say("starting: some text for run.log", sys.stderr)
results = []
for i, setup in enumerate(spec["setups"]):
    emit(Progress(run_id=rid, phase="timed", setup=setup, done=i, total=len(spec["setups"])))
    for n in range(spec.get("lines", 0)):
        say(f"line {setup} {n} {time.time():.6f}")
    time.sleep(spec.get("sleep_s", 0))
    if i == 0 and spec.get("pause_until"):  # a file the test writes once it did what needs a running command
        wait_for_file(spec["pause_until"], 60)
    status = spec.get("status", {}).get(setup, "ok")
    r = SetupResult(run_id=rid, setup=setup, repeat=1, status=status,
                    metrics={"tokens_per_s": Metric(value=1000.0 + i, unit="tokens/s", better="higher")}
                    if status == "ok" else {}, error=None if status == "ok" else "boom")
    results.append(r)
    emit(r)
if spec.get("hang_s"):
    say("hanging")
    wait_for_file(spec.get("release"), spec["hang_s"])  # a file that ends the hang early
summary = summarize_results(spec["setups"], results)
emit(RunFinished(run_id=rid, status="ok" if all(r.status == "ok" for r in results) else "partial",
                 duration_s=1.0, summary=summary))
sys.exit(spec.get("exit", 0))
'''


def emitter_command(setups=("eager-sdpa", "compile-sdpa"), **spec) -> str:
    """A job command printing valid records for $GPUBENCH_RUN_ID (and `lines` text lines per setup)."""
    spec = {"setups": list(setups), **spec}
    return f"python -c {shlex.quote(EMITTER)} {shlex.quote(json.dumps(spec))}"


def run_folders(root: Path) -> list[Path]:
    base = root / "gpubench-results"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def wait_for(probe, timeout_s: float = 30.0, what: str = "condition"):
    """Poll `probe` until it is truthy (a test's wait, not an assertion on time)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def read_until(stream, predicate, limit: int = 10000) -> list[str]:
    """Lines of a subprocess pipe up to and including the first one `predicate` accepts."""
    lines = []
    for _ in range(limit):
        line = stream.readline()
        if not line:
            raise AssertionError(f"stream ended before the awaited line; got {lines[-5:]}")
        lines.append(line)
        if predicate(line):
            return lines
    raise AssertionError("awaited line never came")


def secret_texts(fake, *texts: str, folders=(), objects=()) -> list[str]:
    """Everything the tests scan for secrets: given texts, every file of the folders, stored objects,
    and every request body and query the fake received."""
    out = list(texts)
    for folder in folders:
        out += [p.read_text(errors="replace") for p in Path(folder).rglob("*") if p.is_file()]
    out += list(objects)
    for request in fake.requests:
        out.append(request.body.decode(errors="replace"))
        out.append(json.dumps(request.query))
        out.append(request.path)
    return out
