"""`gpubench show WORKLOAD`: what a study runs and measures, without reading its code."""

import dataclasses

import pytest
from clirun import gpubench

from gpubench.catalog import WORKLOADS
from gpubench.workload import load


def test_show_explains_setups_config_and_metrics(tmp_path):
    result = gpubench("show", "train-compile", cwd=tmp_path)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "  eager-eager              eager PyTorch, transformers' naive matmul-softmax-matmul attention" in out
    assert "  seq_len                  2048  [64]" in out  # the study's default, then the smoke value
    assert "  step_ms_p50              ms, lower is better: median of the per-step times" in out
    assert "+ usd_per_1M_tokens from tokens_per_s and --price" in out


@pytest.mark.parametrize("spec", list(WORKLOADS), ids=lambda s: s.name)
def test_every_workload_shows_every_setup_field_and_metric(spec, tmp_path):
    result = gpubench("show", spec.name, cwd=tmp_path)
    assert result.code == 0, result.stderr
    module = load(spec)
    lines = result.stdout.splitlines()
    for name in [*spec.setups, *(f.name for f in dataclasses.fields(module.config)), *module.metrics]:
        assert any(line.split()[:1] == [name] for line in lines), name
