"""A result stored before schema 1.3 kept the harness's facts in info (the sampler's under "utilisation", the dtype
as compute_dtype or dtype) and named the GPU in its device: read, they are in their typed fields, gone from info,
and the record written again reads back the same (the site writes what it read)."""

from __future__ import annotations

import json

from gpubench.schema import BusiestThread, SetupResult, parse_record, to_line

# as the vLLM study's 1.2 results on the H200 stored them (benchmarks/results/h200-2026-12-02), metrics cut short
SAMPLED_1_2 = {
    "schema_version": "1.2", "run_id": "vllm-serving-20261202T000721Z-74f331", "ts": "2026-12-02T00:09:34.228681Z",
    "kind": "result", "setup": "c1", "repeat": 1, "status": "ok", "device": "cuda:0 NVIDIA H200", "duration_s": 9.5,
    "metrics": {"util_samples": {"value": 185.0, "unit": "samples", "better": None}},
    "info": {"server": "vllm", "compute_dtype": "bfloat16", "device": "cuda", "utilisation": {
        "scope": "timed", "sample_s": 0.05, "cores": 16, "gpu_index": 0,
        "clock_event_reasons_pct": {"sw_power_cap": 32.1},
        "busiest_thread": "VLLM::EngineCor, vLLM's engine core (pid 2736, tid 2736; busiest in 182 of 185)"}},
}
# as train-compile's 1.1 results with GPUBENCH_UTILISATION=off stored them (h200-2026-12-01/bounds-a/tc-off-1)
OFF_1_1 = {
    "schema_version": "1.1", "run_id": "train-compile-20261201T155211Z-5f607c", "ts": "2026-12-01T15:52:38.971666Z",
    "kind": "result", "setup": "eager-sdpa", "repeat": 1, "status": "ok", "device": "cuda:0 NVIDIA H200",
    "metrics": {}, "info": {"utilisation": {"off": "GPUBENCH_UTILISATION=off"}},
}


def read(record: dict) -> SetupResult:
    result = parse_record(json.dumps(record))
    assert isinstance(result, SetupResult)
    return result


def test_a_1_2_result_has_its_utilisation_dtype_and_device_in_their_fields():
    result = read(SAMPLED_1_2)
    assert (result.device, result.device_name, result.dtype) == ("cuda:0", "NVIDIA H200", "bfloat16")
    u = result.utilisation
    assert (u.scope, u.samples, u.seconds, u.sample_s, u.cores, u.gpu_index) == ("timed", 185, None, 0.05, 16, 0)
    assert u.clock_event_reasons_pct == {"sw_power_cap": 32.1} and u.not_sampled is None
    assert u.busiest_thread == BusiestThread(name="VLLM::EngineCor", role="engine_core", pid=2736, tid=2736,
                                             busiest_in=182, intervals=185)
    assert result.info == {"server": "vllm"}  # the workload's own facts stay


def test_sampling_switched_off_reads_as_why_nothing_was_sampled():
    result = read(OFF_1_1)
    assert result.utilisation.not_sampled == "GPUBENCH_UTILISATION=off" and result.utilisation.samples is None
    assert result.info == {} and result.dtype is None


def test_a_thread_without_a_role_and_one_named_by_a_lost_process_read_too():
    for line, name in (("pt_autograd_0 (pid 1314, tid 1396; busiest in 624 of 1230)", "pt_autograd_0"),
                       ("? (pid 2603, tid 2655; busiest in 44 of 172)", "?")):
        record = {**SAMPLED_1_2, "info": {"utilisation": {"scope": "timed", "busiest_thread": line}}}
        thread = read(record).utilisation.busiest_thread
        assert (thread.name, thread.role) == (name, None)


def test_an_upgraded_record_written_again_reads_back_the_same():
    for record in (SAMPLED_1_2, OFF_1_1):
        once = read(record)
        assert parse_record(to_line(once)) == once


def test_a_1_3_result_is_read_as_it_is():
    # a device that only looks like an old one, and a workload's own "dtype" in info, are a 1.3 writer's to keep
    record = {**SAMPLED_1_2, "schema_version": "1.3", "device": "cuda:0 (as the launcher names it)",
              "info": {"dtype": "int8 weights"}}
    result = read(record)
    assert (result.device, result.device_name, result.dtype) == ("cuda:0 (as the launcher names it)", None, None)
    assert result.info == {"dtype": "int8 weights"} and result.utilisation is None
