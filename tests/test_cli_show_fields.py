"""`gpubench show` gives every config field its meaning and allowed values, from the field's own declaration."""

from __future__ import annotations

from clirun import gpubench


def test_show_explains_sentinels_and_ranges(tmp_path):
    result = gpubench("show", "embed", cwd=tmp_path)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = {line.split()[0]: i for i, line in enumerate(lines) if line.startswith("  ") and not line.startswith("    ")}
    assert lines[at["seq_len"] + 1] == "      tokens per passage; 0: the setup's (128 or 512). Allowed: an integer >= 0"
    assert lines[at["vocab"] + 1].startswith("      BERT uncased vocab.txt for random weights; empty: ")
    assert lines[at["batch_size"] + 1].endswith("Allowed: an integer >= 1")
    assert lines[at["dtype"] + 1].endswith("Allowed: one of bfloat16, float16, float32")


def test_show_an_unknown_workload_lists_the_valid_ones(tmp_path):
    result = gpubench("show", "nope", cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench: error: unknown workload 'nope'; valid: train-compile, embed")
