"""The worker's records, in process: progress and info carry the setup's context, durations are each
setup's own, the device of a config without one is said only once torch was loaded, a failed setup keeps what it
recorded, and
`python -m gpubench.run.worker` (main) writes only records on stdout and says a rank's failure in its exit."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
import worker_probe_workload as workload

from gpubench.catalog import WORKLOADS, WorkloadSpec
from gpubench.run import utilisation, worker
from gpubench.schema import Progress, SetupResult, parse_record

SPEC = WorkloadSpec(name="worker-probe", title="t", study="t", setups=tuple(workload.SETUPS), gpus="none",
                    gpu_count=0, min_gpu_memory_gb=0, expected_minutes=1, dependencies={},
                    module="worker_probe_workload")
JOB = {"workload": SPEC.name, "repeat": 3, "run_id": "rid", "smoke": True, "weights": "random",
       "weight_paths": {"org/model": None}}


@pytest.fixture(autouse=True)
def registered():
    WORKLOADS._items[SPEC.name] = SPEC
    yield
    del WORKLOADS._items[SPEC.name]


def job(setups, **config):
    return {**JOB, "setups": setups, "config": config}


def run_group(setups, **config):
    out = io.StringIO()
    worker.Worker(job(setups, **config), out).run_group()
    return [parse_record(line) for line in out.getvalue().splitlines()]


def test_progress_and_info_carry_the_setup_context():
    records = run_group(["first", "second"])
    progress = [r.model_dump(exclude={"ts", "kind", "schema_version"}) for r in records if isinstance(r, Progress)]
    assert progress == [
        {"run_id": "rid", "phase": "session", "setup": "first", "repeat": 3, "done": None, "total": None,
         "message": "opening s"},
        {"run_id": "rid", "phase": "timed", "setup": "first", "repeat": 3, "done": 1, "total": 3,
         "message": "first at work"},
        {"run_id": "rid", "phase": "timed", "setup": "second", "repeat": 3, "done": 1, "total": 3,
         "message": "second at work"},
    ]
    first, second = [r for r in records if isinstance(r, SetupResult)]
    context = {"run_id": "rid", "repeat": 3, "smoke": True, "weights": "random", "weight_paths": {"org/model": None},
               "rank": 0, "world_size": 1, "session": "session-s"}
    for result in (first, second):  # every result also says what the machine did (gpubench/run/utilisation.py)
        assert result.utilisation.sample_s == utilisation.SAMPLE_S
        assert result.metrics.pop("util_samples").unit == "samples"
        for name in list(result.metrics):
            if name in utilisation.METRICS:
                del result.metrics[name]
    assert first.info == {"session_for": "first", "setup": "first", **context}
    assert second.info == {"setup": "second", **context}
    assert {k: (m.value, m.unit, m.better) for k, m in first.metrics.items()} == {
        "value": (1.0, "units", "higher"), "ready_s": (0.25, "s", "lower")}
    assert list(second.metrics) == ["value"]
    assert (first.run_id, first.repeat, first.status, first.error) == ("rid", 3, "ok", None)


def test_each_setup_is_timed_from_its_own_start():
    first, second = [r for r in run_group(["first", "second"], sleep_s=0.3) if isinstance(r, SetupResult)]
    # the second's clock starts after the first's sleep: counted from the group's start, it would be the longer
    assert first.duration_s >= 0.3 and second.duration_s < first.duration_s
    assert first.duration_s == round(first.duration_s, 3) and second.duration_s == round(second.duration_s, 3)


def test_the_device_is_said_only_once_torch_is_loaded(monkeypatch):
    pytest.importorskip("torch")
    [ok] = [r for r in run_group(["second"]) if isinstance(r, SetupResult)]
    assert (ok.device, ok.device_name, ok.dtype) == ("cpu", None, None)  # the probe's config has neither field
    monkeypatch.delitem(sys.modules, "torch")
    [early] = [r for r in run_group(["second"]) if isinstance(r, SetupResult)]
    assert early.device is None


def test_a_failed_setup_keeps_its_info_and_a_skip_its_reason_cut_short():
    broken, skip, oom = [r for r in run_group(["broken", "skip", "oom"]) if isinstance(r, SetupResult)]
    assert (broken.status, broken.error, broken.info["setup"]) == ("error", "ValueError: broken setup", "broken")
    assert (skip.status, skip.error) == ("skipped", "x" * 500)
    assert (oom.status, oom.error, oom.metrics) == ("oom", "MemoryError", {})


def test_a_session_that_fails_gives_every_setup_its_info():
    results = [r for r in run_group(["first", "second"], session_fails=True) if isinstance(r, SetupResult)]
    assert [(r.setup, r.status, r.error, r.info) for r in results] == [
        (s, "error", "RuntimeError: session s did not open", {"session_for": "first"}) for s in ("first", "second")]


def run_main(tmp_path, monkeypatch, the_job, argv=()):
    """main() with stdout and stderr on files of our own: it moves file descriptors about."""
    out, err = open(tmp_path / "out", "w+"), open(tmp_path / "err", "w+")  # noqa: SIM115
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(the_job)))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    try:
        code = worker.main(list(argv))
        print("chatter after main")  # where a library's print goes now: stderr, never the records
        sys.stdout.flush()
    finally:
        monkeypatch.undo()
        out.close()
        err.close()
    return code, (tmp_path / "out").read_text(), (tmp_path / "err").read_text()


def test_main_writes_only_records_on_stdout(tmp_path, monkeypatch):
    code, out, err = run_main(tmp_path, monkeypatch, job(["first", "broken"]))
    assert code == 0
    records = [parse_record(line) for line in out.splitlines()]
    assert all(records) and [r.setup for r in records if isinstance(r, SetupResult)] == ["first", "broken"]
    assert "chatter after main" in err and "Traceback" in err


@pytest.mark.parametrize(("rank", "setup", "code", "records"), [
    (1, "broken", worker.EXIT_RANK_FAILED, 0), (1, "oom", worker.EXIT_RANK_OOM, 0), (1, "skip", 0, 0),
    (1, "first", 0, 0), (0, "broken", 0, 1), (0, "oom", 0, 1)])
def test_a_rank_says_its_setups_fate_in_its_exit_code(tmp_path, monkeypatch, rank, setup, code, records):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", "2")
    got, out, _ = run_main(tmp_path, monkeypatch, job([setup]), ["--rank"])
    assert got == code
    assert len([line for line in out.splitlines() if '"kind":"result"' in line]) == records
    if records:
        assert json.loads(out.splitlines()[-1])["info"]["world_size"] == 2


def test_a_single_setup_of_a_workload_without_processes_runs_here():
    assert worker._world_size(job(["first"])) == 1
    assert worker._world_size(job(["first", "second"])) == 1
    assert worker._world_size({**job(["first"]), "workload": "no-such-workload"}) == 1


def test_the_first_rank_to_fail_stops_the_others():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    failing = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(0.3); sys.exit(7)"])
    assert worker._wait_all([sleeper, failing]) == (1, 7)
    assert sleeper.poll() is not None  # stopped, not left waiting in a collective
    done = [subprocess.Popen([sys.executable, "-c", "pass"]) for _ in range(2)]
    assert worker._wait_all(done) is None and [p.returncode for p in done] == [0, 0]


def test_a_free_port_can_be_bound():
    import socket

    port = worker.free_port()
    assert 1024 <= port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
