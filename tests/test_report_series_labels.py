"""A series is named by what sets it apart from the series shown: a config field that is None (a run made before the
field existed) or at its default (the study's, or the smoke size for a smoke run) names nothing. Issue 34's label,
"NVIDIA H200 (memory_limit_gib=0.0, steps=40, tuned_compile=False, tuned_cuda_graphs=None)", is "NVIDIA H200
(tuned_compile=False)" beside a run at memory_limit_gib=44.4."""

from pathlib import Path

from gpubench.results.report import config_variants
from gpubench.results.stored_runs import StoredRun
from gpubench.schema import Environment, RunStarted


def run(workload: str, config: dict, smoke: bool = False) -> StoredRun:
    started = RunStarted(run_id=f"{workload}-{len(str(config))}", workload=workload, study="s", setups=["a"],
                         repeats=1, smoke=smoke, config=config, environment=Environment(python="3.12", platform="x"))
    return StoredRun(path=Path("."), started=started)


def labels(*runs: StoredRun) -> list[str]:
    found = config_variants(list(runs))
    return [found[id(r)] for r in runs]


def test_none_and_default_fields_name_nothing():
    # finetune's defaults: memory_limit_gib 0.0, tuned_cuda_graphs True, steps 250; tuned_compile is no field now
    old = run("finetune", {"memory_limit_gib": 0.0, "steps": 40, "tuned_compile": False, "tuned_cuda_graphs": None})
    capped = run("finetune", {"memory_limit_gib": 44.4, "steps": 40, "tuned_compile": None, "tuned_cuda_graphs": None})
    graphs = run("finetune", {"memory_limit_gib": 0.0, "steps": 40, "tuned_cuda_graphs": True})
    assert labels(old, capped, graphs) == ["tuned_compile=False", "memory_limit_gib=44.4", ""]


def test_a_field_left_out_by_an_older_run_is_no_difference_from_its_default():
    # train-compile: cold_compile_cache defaults to True, timed_steps to 20
    older = run("train-compile", {"timed_steps": 20, "cold_compile_cache": None})
    newer = run("train-compile", {"timed_steps": 100, "cold_compile_cache": True})
    assert labels(older, newer) == ["", "timed_steps=100"]


def test_a_smoke_runs_default_is_its_smoke_size():
    smoke = run("train-compile", {"timed_steps": 3, "hidden_size": 64}, smoke=True)
    longer = run("train-compile", {"timed_steps": 5, "hidden_size": 64}, smoke=True)
    assert labels(smoke, longer) == ["", "timed_steps=5"]


def test_runs_that_agree_have_no_label_and_a_workload_not_known_here_is_named_by_its_set_fields():
    assert labels(run("sdxl", {"steps": 30}), run("sdxl", {"steps": 30})) == ["", ""]
    assert labels(run("gone", {"k": None, "j": 2}), run("gone", {"k": 1, "j": 2})) == ["", "k=1"]
