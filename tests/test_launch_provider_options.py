"""Choosing where runs go, and the bad inputs of each place, before anything is asked of it: one line, exit 2,
nothing written. A Docker-hosts dry run needs neither a key nor an engine."""

from __future__ import annotations

import pytest
from test_launch_support import launch

CLUSTER = '[slurm]\npython = "/opt/venv/bin/python"\n[slurm.gpus]\nH100 = { partition = "h100" }\n'
SMOKE = ["train-compile", "--smoke", "--setups", "eager-sdpa"]


@pytest.fixture
def here(tmp_path, monkeypatch):
    for name in ("RUNCRATE_API_KEY", "DOCKER_HOST", "SLURM_CONF", "GPUBENCH_RESULTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUBENCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    return tmp_path


def one_line(result, *fragments: str) -> str:
    assert result.code == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpubench-launch: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


@pytest.mark.parametrize("args, fragments", [
    ([*SMOKE, "--slurm", "cluster.toml", "--docker-host", "unix:///x.sock"],
     ["--slurm and --docker-host: a run goes to one place"]),
    ([*SMOKE, "--gpu", "L40S", "--slurm-python", "/opt/venv/bin/python"],
     ["--slurm-python applies to Slurm runs (with --slurm)"]),
    ([*SMOKE, "--docker-host", "box:2375"], ["'box:2375' is not a Docker host", "ssh://user@host"]),
    ([*SMOKE, "--docker-host", "ssh://me@box", "--gpu", "H100", "--gpu", "L40S"], ["give one --gpu"]),
    (["train-compile", "--docker-host", "ssh://me@box"], ["name the host's GPU: --gpu NAME[:N]"]),
    ([*SMOKE, "--slurm", "cluster.toml", "--gpu", "H100", "--gpu", "h100", "--dry-run"],
     ["the same GPU twice: --gpu H100 and --gpu H100 are both H100"]),
    (["train-compile", "--docker-host", "ssh://me@box", "--gpu", "B300"], ["no --gpu fits train-compile", "B300"]),
])
def test_bad_provider_options(here, capsys, args, fragments):
    one_line(launch(capsys, *args), *fragments)
    assert not (here / "gpubench-results").exists() and not (here / "state").exists()


def test_a_docker_dry_run_needs_no_key_and_no_engine(here, capsys):
    result = launch(capsys, *SMOKE, "--docker-host", "ssh://bench@h100-box", "--gpu", "H100:2", "--dry-run")
    assert result.code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "host ssh://bench@h100-box" in out and "gpus 2" in out
    # the smoke's safety net (19 min) as the container's own: SIGINT at its end, SIGKILL a minute later
    assert ("runs timeout --signal=INT --kill-after=60 1140 gpubench run train-compile --setups eager-sdpa --smoke"
            in out)
    assert "dry run: no engine was asked" in out and "dry run: nothing was started" in out
    assert not (here / "gpubench-results").exists()


def _plan(here, text: str) -> str:
    cell = '[[cell]]\nworkload = "train-compile"\ngpus = ["H100"]\nargs = ["--smoke", "--setups", "eager-sdpa"]\n'
    (here / "plan.toml").write_text(text + cell)
    return str(here / "plan.toml")


@pytest.mark.parametrize("table, fragments", [
    (CLUSTER + '[docker]\n[docker.gpus]\nH100 = { host = "ssh://me@box" }\n', ["a sweep goes to one place"]),
    ('[docker]\nmax_gpu_hours = -1\n[docker.gpus]\nH100 = { host = "ssh://me@box" }\n',
     ["max_gpu_hours must be a positive number"]),
    ('[docker]\n[docker.gpus]\nH100 = { host = "me@box" }\n', ["[docker.gpus] H100", "'me@box' is not a Docker host"]),
    ('[docker]\n[docker.gpus]\nH100 = { host = "ssh://me@box", device = "0" }\n', ["unknown key 'device'"]),
    ('[docker]\n[docker.gpus]\nL40S = { host = "ssh://me@box" }\n', ["unknown GPU 'H100'; valid: L40S"]),
    ('[docker]\nhosts = 1\n', ["unknown key 'hosts' in [docker]"]),
])
def test_bad_docker_tables(here, capsys, table, fragments):
    line = one_line(launch(capsys, "sweep", _plan(here, table), "--dry-run"), *fragments)
    assert line.startswith("gpubench-launch: error: plan ")
    assert not (here / "gpubench-results").exists()


def test_a_docker_sweep_dry_run_shows_the_hosts_and_the_cap(here, capsys):
    table = '[docker]\nmax_gpu_hours = 0.1\n[docker.gpus]\nH100 = { host = "ssh://bench@h100-box", devices = "1" }\n'
    result = launch(capsys, "sweep", _plan(here, table), "--dry-run")
    out = " ".join(result.stdout.split())
    assert "host ssh://bench@h100-box" in out and "gpus 1" in out, result.stdout
    assert "at most 0.32 GPU-hours; max_gpu_hours 0.1" in out  # the smoke's 19-minute safety net on one GPU
    one_line(result, "over [docker] max_gpu_hours 0.1", "nothing was started")  # printed, then refused
