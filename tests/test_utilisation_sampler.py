"""The utilisation sampler (gpubench/run/utilisation.py): per-thread CPU time from /proc against a real busy
thread, the summary of samples, and NVML's raw answers as recorded on an H200."""

import os
import threading
import time

import pytest

from gpubench.run import utilisation as u


def spin(stop: threading.Event, tid: list) -> None:
    tid.append(threading.get_native_id())
    x = 0
    while not stop.is_set():
        x += 1


def sampled(sampler, count: int = 8, at_least_s: float = 0.6, deadline_s: float = 60.0) -> None:
    """Wait until the sampler has `count` readings and `at_least_s` have passed: on busy cores its thread may
    get fewer readings in a fixed time than the interval promises."""
    started = time.monotonic()
    while (len(sampler.samples) < count or time.monotonic() - started < at_least_s) and \
            time.monotonic() - started < deadline_s:
        time.sleep(0.05)


def test_a_spinning_thread_is_the_busiest_thread_and_an_idle_process_shows_little():
    idle = u.Sampler(None, interval=0.02).start()
    sampled(idle)  # this process idles: the main thread sleeps, nothing else runs
    quiet = idle.stop()
    stop, tid = threading.Event(), []
    worker = threading.Thread(target=spin, args=(stop, tid))
    worker.start()
    busy = u.Sampler(None, interval=0.02).start()
    sampled(busy)
    loud = busy.stop()
    stop.set()
    worker.join()
    assert loud.metrics["util_samples"] >= 5 and quiet.metrics["util_samples"] >= 5
    # the spinner is named as the busiest thread in (nearly) every interval; the sampler leaves itself out
    assert loud.facts.busiest_thread.tid == tid[0]
    # on a machine whose cores are shared the spinner gets less than a core, but far more than an idle process
    assert loud.metrics["busiest_thread_pct"] > 5 * max(quiet.metrics["busiest_thread_pct"], 1.0)
    assert quiet.metrics["busiest_thread_pct"] < 20
    assert "gpu_busy_pct" not in loud.metrics  # no NVML: host figures only


def test_a_timed_part_has_its_first_and_last_reading_however_slow_the_thread():
    # The thread's next reading is a minute away: what the summary has comes from entering and leaving the part.
    sampler = u.Sampler(None, interval=60).start()
    sampler.mark(False)  # a phase before the timed part: no reading of its own
    sampler.mark(True)
    end = time.process_time() + 0.05
    while time.process_time() < end:  # the timed part: this thread busy
        pass
    sampler.mark(False)
    figures = sampler.stop()
    assert figures.facts.scope == "timed" and figures.facts.samples == 2
    assert figures.metrics["util_samples"] == 2  # entering and leaving, nothing else marked timed
    assert figures.facts.seconds >= 0.05
    assert figures.metrics["busiest_thread_pct"] > 0 and figures.metrics["host_cpu_pct"] > 0


def test_a_setup_that_returns_inside_its_timed_part_still_gets_its_last_reading():
    sampler = u.Sampler(None, interval=60).start()
    sampler.mark(True)
    figures = sampler.stop()
    assert figures.facts.scope == "timed" and figures.metrics["util_samples"] == 2


def test_a_running_threads_cpu_time_grows_and_the_sampler_can_leave_itself_out():
    stop, tid = threading.Event(), []
    worker = threading.Thread(target=spin, args=(stop, tid))
    worker.start()
    while not tid:
        time.sleep(0.01)
    key = (os.getpid(), tid[0])
    before = u.thread_cpu_ns([os.getpid()])[key]
    time.sleep(0.3)
    after = u.thread_cpu_ns([os.getpid()])[key]
    stop.set()
    worker.join()
    assert after - before > 0  # the spinner ran; the sampler's own thread can be left out:
    assert u.thread_cpu_ns([os.getpid()], skip_tid=threading.get_native_id()).get(
        (os.getpid(), threading.get_native_id())) is None


def test_process_tree_includes_children():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        deadline = time.monotonic() + 5
        while child.pid not in u.process_tree(os.getpid()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in u.process_tree(os.getpid())
    finally:
        child.kill()
        child.wait()


def sample(t, timed, threads, gpus=()):
    return u.Sample(t=t, timed=timed, gpus=list(gpus), threads=threads)


def test_host_shares_are_cpu_time_over_wall_time():
    a = sample(0.0, True, {(1, 1): 0, (1, 2): 0})
    b = sample(0.5, True, {(1, 1): 400_000_000, (1, 2): 100_000_000, (1, 3): 50_000_000})  # tid 3 started
    cpu, top, key = u.host_shares(a, b)
    assert cpu == pytest.approx(110.0) and top == pytest.approx(80.0) and key == (1, 1)


def reading(busy, clock=100.0, reasons=0, mem=10.0):
    return u.GpuReading(busy_pct=busy, mem_busy_pct=mem, sm_clock_pct=clock, power_pct=50.0, reasons=reasons)


def test_summary_keeps_the_timed_samples_and_the_busiest_gpu():
    ns = 10_000_000
    samples = [sample(0.00, False, {(1, 1): 0}, [reading(0), reading(90)]),
               sample(0.05, False, {(1, 1): 5 * ns}, [reading(0), reading(90)]),
               sample(0.10, True, {(1, 1): 10 * ns}, [reading(10), reading(50, reasons=0x4)]),
               sample(0.15, True, {(1, 1): 10 * ns}, [reading(20), reading(70, clock=80.0)]),
               sample(0.20, True, {(1, 1): 15 * ns}, [reading(30), reading(90, reasons=0x1)])]
    figures = u.summarise(samples, cores=4, names={(1, 1): "python3"})
    m = figures.metrics
    assert m["util_samples"] == 3 and figures.facts.scope == "timed" and figures.facts.seconds == 0.1
    assert figures.facts.gpu_index == 1 and figures.facts.gpu_busy_pct_each == [20.0, 70.0]
    assert m["gpu_busy_pct"] == pytest.approx(70.0) and m["gpu_busy_p90_pct"] == 90.0
    assert m["sm_clock_pct"] == pytest.approx(280 / 3)
    assert m["throttled_pct"] == pytest.approx(100 / 3)  # sw_power_cap in one of three; gpu_idle is no throttle
    assert figures.facts.clock_event_reasons_pct == {"sw_power_cap": 33.3, "gpu_idle": 33.3}
    # host: the two intervals inside the timed part (samples 2-3, 3-4) used 0 and 50 ms of CPU in 50 ms each;
    # the one ending at sample 2 began before the part
    assert m["busiest_thread_pct"] == pytest.approx(50.0) and m["busiest_thread_p90_pct"] == pytest.approx(100.0)
    assert m["host_cpu_pct"] == pytest.approx(50.0)
    thread = figures.facts.busiest_thread
    assert (thread.name, thread.role, thread.pid, thread.tid, thread.busiest_in, thread.intervals) == (
        "python3", None, 1, 1, 2, 2)


def test_without_a_timed_phase_the_whole_setup_is_summarised():
    samples = [sample(i * 0.05, False, {(1, 1): i * 1_000_000}) for i in range(4)]
    figures = u.summarise(samples, cores=2)
    assert figures.metrics["util_samples"] == 4 and figures.facts.scope == "setup"
    assert figures.metrics["host_cpu_pct"] == pytest.approx(2.0)


def test_p90_is_the_nearest_rank():
    assert u.p90(list(range(1, 11))) == 9 and u.p90([5.0]) == 5.0 and u.p90(list(range(1, 21))) == 18


# NVML's answers as read on the H200 (2026-12-01): idle before a run, and under train-compile's compile-sdpa.
H200_IDLE = {"gpu_util": 0, "mem_util": 0, "sm_clock_mhz": 345, "sm_clock_max_mhz": 1980, "power_mw": 79722,
             "power_limit_mw": 700000, "reasons": 0x1}
H200_LOADED = {"gpu_util": 100, "mem_util": 29, "sm_clock_mhz": 1755, "sm_clock_max_mhz": 1980, "power_mw": 672410,
               "power_limit_mw": 700000, "reasons": 0x4}


def test_nvml_readings_as_recorded_on_an_h200():
    idle = u.gpu_reading(H200_IDLE)
    assert idle.busy_pct == 0 and idle.sm_clock_pct == pytest.approx(17.42, abs=0.01)
    assert idle.power_pct == pytest.approx(11.39, abs=0.01) and not idle.throttled
    assert u.reason_names(idle.reasons) == ["gpu_idle"]
    loaded = u.gpu_reading(H200_LOADED)
    assert loaded.busy_pct == 100 and loaded.mem_busy_pct == 29 and loaded.throttled
    assert loaded.sm_clock_pct == pytest.approx(88.64, abs=0.01) and loaded.power_pct == pytest.approx(96.06, abs=0.01)
    assert u.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]


def test_a_figure_the_gpu_does_not_report_is_left_out():
    raw = {**H200_LOADED, "power_mw": None, "sm_clock_max_mhz": None, "reasons": None}
    r = u.gpu_reading(raw)
    assert r.power_pct is None and r.sm_clock_pct is None and r.reasons == 0


def _nvml_gpu() -> bool:
    nvml, _ = u.open_nvml()
    if nvml is None:
        return False
    nvml.close()
    return True


@pytest.mark.skipif(not _nvml_gpu(), reason="needs NVML and an NVIDIA GPU")
def test_live_nvml_reading():
    nvml, _ = u.open_nvml()
    try:
        for r in nvml.read():
            assert 0 <= r.busy_pct <= 100 and 0 <= r.mem_busy_pct <= 100
    finally:
        nvml.close()


def test_switched_off_by_the_variable(monkeypatch):
    monkeypatch.setenv(u.OFF_VARIABLE, "off")
    assert not u.enabled()
    monkeypatch.setenv(u.OFF_VARIABLE, "on")
    assert u.enabled()


def test_a_child_named_as_a_client_is_sampled_under_its_role_and_a_server_by_its_command_line():
    import subprocess
    import sys

    # a spinning child that names itself as fanout.py's client processes do, and an idle one whose command line
    # reads like vLLM's API server
    spinner = subprocess.Popen([sys.executable, "-c", "import ctypes; ctypes.CDLL(None).prctl(15, b'gpubench-client',"
                                " 0, 0, 0); print(1, flush=True)\nwhile True: pass"], stdout=subprocess.PIPE)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                               "vllm.entrypoints.openai.api_server"])
    try:
        spinner.stdout.readline()  # renamed
        assert u.process_role(spinner.pid) == "client" and u.process_role(server.pid) == "api_server"
        assert u.process_role(os.getpid()) is None
        sampler = u.Sampler(None, interval=0.02).start()
        sampler.mark(True)
        time.sleep(0.8)
        got = sampler.stop()
    finally:
        for proc in (spinner, server):
            proc.kill()
            proc.wait()
    # the spinner is the busiest thread (a share of a shared core: the machine may be busy), the server idles
    assert got.metrics["client_thread_pct"] > 2
    assert got.metrics["client_thread_pct"] > 0.8 * got.metrics["busiest_thread_pct"]
    assert got.metrics.get("api_server_thread_pct", 0) < 0.2 * got.metrics["client_thread_pct"]
    assert got.facts.busiest_thread.role == "client"
