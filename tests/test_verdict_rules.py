"""The verdict rules (gpubench/results/verdict.py) against hand-made figures at and around each threshold."""

from gpubench.results import verdict
from gpubench.schema import Metric, SetupResult

T = verdict.thresholds()


def gpu(**overrides):
    """A GPU result that no rule claims: busy GPU, modest FLOP/s, no bandwidth, unthrottled."""
    base = {"util_samples": 200.0, "gpu_busy_pct": 99.0, "busiest_thread_pct": 70.0, "pct_of_peak": 20.0,
            "throttled_pct": 0.0, "sm_clock_pct": 98.0, "power_pct": 60.0}
    return {**base, **overrides}


def label(values):
    return verdict.judge(values).label


def test_thresholds_come_from_the_data_file_with_a_reason_each():
    assert {"min_samples", "throttled_share", "throttled_clock", "compute_bound_peak", "compute_bound_busy",
            "memory_bound_bandwidth", "host_bound_busy", "saturated_thread", "cpu_cores_busy",
            "storage_bound_read", "storage_above_read", "gpu_bound_busy"} <= set(T)


def test_too_few_samples_is_undetermined():
    assert label(gpu(util_samples=T["min_samples"] - 1)) == "undetermined"
    assert label(gpu(util_samples=T["min_samples"], pct_of_peak=T["compute_bound_peak"])) == "compute-bound"
    assert label({}) == "undetermined"  # sampling off: no figures at all


def test_compute_bound_at_the_peak_share_with_a_busy_gpu():
    at = T["compute_bound_peak"]
    assert label(gpu(pct_of_peak=at)) == "compute-bound"
    assert label(gpu(pct_of_peak=at - 0.1)) == "gpu-bound"  # busy, below the roof: the next rule's
    assert label(gpu(pct_of_peak=at, gpu_busy_pct=T["compute_bound_busy"] - 0.1)) == "undetermined"
    v = verdict.judge(gpu(pct_of_peak=41.0))
    assert "41% of peak FLOP/s" in v.basis and v.figures["pct_of_peak"] == 41.0


def test_throttled_needs_the_reason_and_a_lowered_clock():
    share, clock = T["throttled_share"], T["throttled_clock"]
    assert label(gpu(throttled_pct=share + 1, sm_clock_pct=clock - 1)) == "throttled"
    assert label(gpu(throttled_pct=share, sm_clock_pct=clock - 1)) == "gpu-bound"  # not more than the share
    # the H200 at its power cap with the clock at 98%: the reason alone names no bound
    assert label(gpu(throttled_pct=100.0, sm_clock_pct=clock)) == "gpu-bound"
    # a throttled clock is named before compute-bound: the power limit set the pace
    assert label(gpu(throttled_pct=100.0, sm_clock_pct=82.0, pct_of_peak=40.0)) == "throttled"


def test_memory_bound_at_the_bandwidth_share():
    at = T["memory_bound_bandwidth"]
    assert label(gpu(pct_of_peak_bandwidth=at)) == "memory-bound"
    assert label(gpu(pct_of_peak_bandwidth=at - 0.1)) == "gpu-bound"


# What the H200 read (issue 25): busy GPUs whose kernels ran below both roofs, "undetermined" before this rule.
LORA_TUNED = {"util_samples": 120.0, "gpu_busy_pct": 92.0, "busiest_thread_pct": 99.0, "pct_of_peak": 20.0,
              "throttled_pct": 0.0, "sm_clock_pct": 99.0, "power_pct": 55.0}
VLLM_FP8_C1 = {"util_samples": 400.0, "gpu_busy_pct": 95.0, "busiest_thread_pct": 60.0,
               "pct_of_peak_bandwidth": 54.0, "throttled_pct": 0.0, "sm_clock_pct": 99.0, "power_pct": 50.0}
VLLM_FP8_C8 = {**VLLM_FP8_C1, "gpu_busy_pct": 98.0, "pct_of_peak_bandwidth": 55.0}


def test_a_busy_gpu_below_both_roofs_is_gpu_bound_with_its_figures():
    tuned = verdict.judge(LORA_TUNED)
    assert tuned.label == "gpu-bound"
    assert tuned.basis.startswith("GPU busy 92% (>= 90%) below the compute roof (20% of peak FLOP/s (< 35%); "
                                  "bandwidth not measured): small, latency- or memory-bound kernels")
    for figures, busy, share in ((VLLM_FP8_C1, 95, 54), (VLLM_FP8_C8, 98, 55)):
        v = verdict.judge(figures)
        assert v.label == "gpu-bound" and v.figures["pct_of_peak_bandwidth"] == share
        assert f"GPU busy {busy}% (>= 90%) below the memory roof ({share}% of peak HBM bandwidth (< 60%)" in v.basis
    both = verdict.judge({**VLLM_FP8_C8, "pct_of_peak": 3.0})
    assert "below both roofs (3% of peak FLOP/s (< 35%), 55% of peak HBM bandwidth (< 60%)): small or latency-bound" \
        in both.basis
    # at the rule's edge: a GPU idle over a tenth of the time is not named the limit
    at = T["gpu_bound_busy"]
    assert label({**VLLM_FP8_C1, "gpu_busy_pct": at}) == "gpu-bound"
    assert label({**VLLM_FP8_C1, "gpu_busy_pct": at - 0.1}) == "undetermined"
    # nothing measured of either roof: still the GPU, and the basis says the roofs are unknown
    bare = verdict.judge({k: v for k, v in VLLM_FP8_C1.items() if k != "pct_of_peak_bandwidth"})
    assert bare.label == "gpu-bound" and "neither roof measured" in bare.basis


def test_host_bound_needs_an_idle_gpu_and_a_saturated_thread():
    busy, thread = T["host_bound_busy"], T["saturated_thread"]
    assert label(gpu(gpu_busy_pct=busy - 0.1, busiest_thread_pct=thread)) == "host-bound"
    assert label(gpu(gpu_busy_pct=busy, busiest_thread_pct=thread)) == "gpu-and-host-bound"  # the next rule's
    assert label(gpu(gpu_busy_pct=12.0, busiest_thread_pct=thread - 0.1)) == "undetermined"
    v = verdict.judge(gpu(gpu_busy_pct=14.5, busiest_thread_pct=93.6))
    assert v.basis == "GPU busy 14% (< 70%) while the busiest host thread used 94% of a core (>= 85%)"


def test_storage_bound_between_the_read_shares():
    low, high = T["storage_bound_read"], T["storage_above_read"]
    idle = {"gpu_busy_pct": 3.0, "busiest_thread_pct": 40.0, "raw_read_gbps": 2.0}
    assert label(gpu(**idle, load_read_gbps=2.0 * low / 100)) == "storage-bound"
    assert label(gpu(**idle, load_read_gbps=2.0 * high / 100)) == "storage-bound"
    assert label(gpu(**idle, load_read_gbps=2.0 * (low - 1) / 100)) == "undetermined"
    assert label(gpu(**idle, load_read_gbps=2.0 * (high + 1) / 100)) == "undetermined"  # the page cache served it


def cpu(**overrides):
    return {"util_samples": 50.0, "host_cpu_pct": 100.0, "busiest_thread_pct": 60.0, "cores": 4.0, **overrides}


def test_a_gpu_result_without_gpu_figures_is_not_judged_as_a_cpu():
    assert label(cpu(host_cpu_pct=400.0)) == "compute-bound"
    v = verdict.judge(cpu(host_cpu_pct=400.0, on_gpu=1.0))
    assert v.label == "undetermined" and "no GPU figures" in v.basis


def test_on_a_cpu_the_host_figures_decide():
    cores_busy = T["cpu_cores_busy"]
    assert label(cpu(host_cpu_pct=4 * cores_busy)) == "compute-bound"
    assert label(cpu(host_cpu_pct=4 * cores_busy - 1)) == "undetermined"
    thread = T["saturated_thread"]
    assert label(cpu(host_cpu_pct=100.0, busiest_thread_pct=thread)) == "host-bound"  # 1 of 4 cores
    assert label(cpu(host_cpu_pct=100.0, busiest_thread_pct=thread - 1)) == "undetermined"
    assert label(cpu(host_cpu_pct=200.0, busiest_thread_pct=thread)) == "undetermined"  # half the cores in use
    assert label(cpu(cores=None)) == "undetermined"


def result(setup, status="ok", label=None, repeat=1):
    info = {"verdict": label} if label else {}
    return SetupResult(run_id="r", setup=setup, repeat=repeat, status=status, info=info,
                       metrics={"x": Metric(value=1.0, unit="u")} if status == "ok" else {})


def test_per_setup_names_one_label_or_the_mix():
    results = [result("a", label="host-bound"), result("a", label="host-bound", repeat=2),
               result("b", label="host-bound"), result("b", label="undetermined", repeat=2),
               result("c", status="error")]
    assert verdict.per_setup(results) == {"a": "host-bound", "b": "host-bound (1/2), undetermined (1/2)"}


def test_client_bound_when_a_load_generator_process_passes_its_share_of_a_core():
    at = T["client_saturated"]
    assert label(gpu(client_cpu_pct=at + 1, pct_of_peak=T["compute_bound_peak"])) == "client-bound"
    assert label(gpu(client_thread_pct=at + 1, gpu_busy_pct=30.0)) == "client-bound"
    assert label(gpu(client_cpu_pct=at, gpu_busy_pct=30.0, busiest_thread_pct=99.0)) == "host-bound"
    v = verdict.judge(gpu(client_cpu_pct=97.0))
    assert "97% of a core" in v.basis and v.figures["client_cpu_pct"] == 97.0


def test_host_bound_names_the_server_process_whose_thread_is_the_busiest():
    v = verdict.judge(gpu(gpu_busy_pct=40.0, busiest_thread_pct=98.0, api_server_thread_pct=97.0,
                          engine_core_thread_pct=60.0, client_thread_pct=20.0))
    assert v.label == "host-bound" and "(vLLM's API server)" in v.basis and v.figures["engine_core_thread_pct"] == 60
    v = verdict.judge(gpu(gpu_busy_pct=40.0, busiest_thread_pct=98.0, engine_core_thread_pct=97.0))
    assert "(vLLM's engine core)" in v.basis
    assert "(" not in verdict.judge(gpu(gpu_busy_pct=40.0, busiest_thread_pct=98.0)).basis.split("thread")[1][:3]


# vllm-fp8 fp8-c64 on the H200 as issue 33 read it, "undetermined" before the gpu-and-host-bound rule
VLLM_FP8_C64 = {"util_samples": 400.0, "gpu_busy_pct": 89.0, "busiest_thread_pct": 83.0, "api_server_thread_pct": 83.0,
                "pct_of_peak_bandwidth": 44.0, "throttled_pct": 0.0, "sm_clock_pct": 95.0}


def test_a_gpu_near_full_with_a_host_thread_near_its_limit_is_named_with_what_would_move_it():
    v = verdict.judge(VLLM_FP8_C64)
    assert v.label == "gpu-and-host-bound"
    assert v.basis.startswith("GPU busy 89% (70-90%: near full) with the busiest host thread (vLLM's API server) at 83%"
                              " of a core (>= 75%: near its limit): neither alone is the bound; what would move it: a"
                              " second API server process (vllm serve --api-server-count 2)")
    assert "44% of peak bandwidth, SM clock 95% of max" in v.basis
    assert v.figures["api_server_thread_pct"] == 83 and v.figures["gpu_busy_pct"] == 89
    # the thread's own process decides the remedy: the load generator's, or (no sampled role) a launching thread's
    client = verdict.judge({**VLLM_FP8_C64, "api_server_thread_pct": 40.0, "client_thread_pct": 83.0})
    assert "(gpubench's load generator)" in client.basis and "gpubench loadgen --processes N" in client.basis
    bare = verdict.judge({k: v for k, v in VLLM_FP8_C64.items() if k != "api_server_thread_pct"})
    assert bare.label == "gpu-and-host-bound" and verdict.DEFAULT_RELIEF in bare.basis


def test_llama_servers_slot_thread_is_named_with_what_would_take_work_off_it():
    # ollama-vs-vllm llamacpp-q4km-u1 on the H100 (benchmarks/results/h100-2026-12-07), with the role's figure
    figures = {"util_samples": 200.0, "gpu_busy_pct": 84.0, "busiest_thread_pct": 98.0, "sm_clock_pct": 100.0,
               "llama_server_thread_pct": 98.0, "client_thread_pct": 2.0}
    v = verdict.judge(figures)
    assert v.label == "gpu-and-host-bound" and "thread (llama.cpp's server) at 98%" in v.basis
    assert "--backend-sampling" in v.basis and "torch.compile" not in v.basis
    v = verdict.judge({**figures, "gpu_busy_pct": 42.0, "busiest_thread_pct": 100.0, "llama_server_thread_pct": 100.0})
    assert v.label == "host-bound" and "(llama.cpp's server)" in v.basis


def test_gpu_and_host_bound_at_its_edges():
    low, high, near = T["host_bound_busy"], T["gpu_bound_busy"], T["near_saturated_thread"]
    assert label({**VLLM_FP8_C64, "gpu_busy_pct": low}) == "gpu-and-host-bound"
    assert label({**VLLM_FP8_C64, "gpu_busy_pct": high - 0.1}) == "gpu-and-host-bound"
    assert label({**VLLM_FP8_C64, "gpu_busy_pct": high}) == "gpu-bound"  # a GPU busy 90% is the limit
    assert label({**VLLM_FP8_C64, "busiest_thread_pct": near}) == "gpu-and-host-bound"
    assert label({**VLLM_FP8_C64, "busiest_thread_pct": near - 0.1}) == "undetermined"
    # under host_bound_busy a thread near (not at) saturation is neither rule's
    assert label({**VLLM_FP8_C64, "gpu_busy_pct": low - 0.1}) == "undetermined"


def test_a_result_without_utilisation_figures_says_it_was_not_sampled():
    v = verdict.judge({"tokens_per_s": 100.0})
    assert v.label == "undetermined" and v.basis.startswith("not sampled")
    assert verdict.judge({"util_samples": 3.0}).basis == "3 utilisation samples (fewer than 10)"


def test_a_load_faster_than_the_disk_is_undetermined_with_the_page_cache_named():
    # cold-start cache-warm on the H200 (bounds-c): a load at 337% of a cold read of its files
    v = verdict.judge(gpu(gpu_busy_pct=10.0, busiest_thread_pct=70.0, load_read_gbps=3.37, raw_read_gbps=1.0))
    assert v.label == "undetermined"
    assert v.basis.startswith("load at 337% of a plain cold read of the same files (> 125%): the page cache served it")
