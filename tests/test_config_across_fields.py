"""Rules across config fields (a model shape, a request that must fit the context) are checked with the rest,
before anything runs: one line, exit 2, nothing written."""

from __future__ import annotations

import pytest
from clirun import gpubench


@pytest.mark.parametrize("args, says", [
    (["train-compile", "--set", "num_heads=7"], "hidden_size 1024 does not divide by num_heads 7"),
    (["ddp-scaling", "--set", "allreduce_min_mb=4096"], "allreduce_min_mb 4096 is above allreduce_max_mb 1024"),
    (["ddp-scaling", "--set", "heads_355m=5"], "width_355m 1024 does not divide by heads_355m 5"),
    (["cold-start", "--set", "num_kv_heads=3"], "num_kv_heads 3: the heads must divide the hidden size"),
    (["finetune", "--smoke", "--set", "num_heads=3"], "num_heads 3, num_kv_heads 2: the heads must divide"),
    (["vllm-serving", "--set", "input_tokens=4000"], "input_tokens 4000 + output_tokens 256 is more than"
                                                      " max_model_len 4096"),
    (["vllm-fp8", "--smoke", "--set", "output_tokens=2000"], "is more than max_model_len 1024"),
    (["vllm-prefix-cache", "--set", "prefix_long=8100"], "the longest request (8428 tokens"),
    (["sdxl", "--smoke", "--set", "timed_images_b4=6"], "must be a positive multiple of 4"),
])
def test_a_rule_across_fields(tmp_path, args, says):
    result = gpubench("run", *args, "--check", cwd=tmp_path)
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: ") and says in line, line
    assert list(tmp_path.iterdir()) == []
