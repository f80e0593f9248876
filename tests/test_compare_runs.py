"""`gpubench compare A B`: ratios per setup and metric, noise-aware verdicts, an exit code that can gate CI."""

import json

import pytest
from clirun import gpubench

from gpubench.run.environment import collect
from gpubench.schema import Metric, RunFinished, RunStarted, SetupResult, summarize_results, to_line


def write_run(folder, workload, setup_values, finished=True, run_id=None, smoke=False):
    """A run folder as `gpubench run` writes it; setup_values: {setup: [(tokens_per_s, step_ms), ...]}."""
    run_id = run_id or f"{workload}-20261130T000000Z-{folder.name[-6:].rjust(6, '0')}"
    folder.mkdir(parents=True)
    results = [SetupResult(run_id=run_id, setup=setup, repeat=i + 1, status="ok", metrics={
        "tokens_per_s": Metric(value=tps, unit="tokens/s", better="higher"),
        "step_ms": Metric(value=ms, unit="ms", better="lower")})
        for setup, values in setup_values.items() for i, (tps, ms) in enumerate(values)]
    records = [RunStarted(run_id=run_id, workload=workload, study="s", setups=list(setup_values), repeats=1,
                          smoke=smoke, config={}, environment=collect()), *results]
    if finished:
        records.append(RunFinished(run_id=run_id, status="ok", duration_s=1.0,
                                   summary=summarize_results(list(setup_values), results)))
    (folder / "results.jsonl").write_text("".join(to_line(r) + "\n" for r in records))
    return folder


def test_ratios_and_verdicts_use_the_measured_spread(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10), (102, 10), (98, 10)],
                                                    "compile-sdpa": [(200, 5), (200, 5), (200, 5)]})
    # eager-sdpa: 8% faster but its runs spread by 10% (CV), so within noise; compile-sdpa: 10% slower, steady
    b = write_run(tmp_path / "b", "train-compile", {"eager-sdpa": [(108, 10), (120, 10), (96, 10)],
                                                    "compile-sdpa": [(180, 5.5), (180, 5.5), (180, 5.5)]})
    result = gpubench("compare", str(a), str(b), "--all", cwd=tmp_path)
    assert result.code == 0, result.stderr
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in result.stdout.splitlines()[2:]}
    assert "| 100 | 108 | 1.080 | within noise |" in rows[("eager-sdpa", "tokens_per_s (tokens/s)")]
    assert "| 200 | 180 | 0.900 | worse |" in rows[("compile-sdpa", "tokens_per_s (tokens/s)")]
    assert "| 5 | 5.5 | 1.100 | worse |" in rows[("compile-sdpa", "step_ms (ms)")]  # lower is better


def test_a_regression_of_a_chosen_metric_fails_the_command(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10), (100.5, 10), (99.5, 10)]})
    b = write_run(tmp_path / "b", "train-compile", {"eager-sdpa": [(90, 11), (90.5, 11), (89.5, 11)]})
    result = gpubench("compare", str(a), str(b), "--fail-on", "tokens_per_s", cwd=tmp_path)
    assert result.code == 1
    assert "eager-sdpa tokens_per_s regressed: 100 -> 90 tokens/s (beyond ±5%)" in result.stderr
    assert gpubench("compare", str(b), str(a), "--fail-on", "tokens_per_s", cwd=tmp_path).code == 0  # improved
    wide = gpubench("compare", str(a), str(b), "--fail-on", "tokens_per_s", "--noise", "0.15", cwd=tmp_path)
    assert wide.code == 0 and "within noise" not in wide.stdout  # hidden unless --all


def test_single_repeat_smoke_runs_get_no_verdict_and_are_said_to_be_smoke_runs(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10)]}, smoke=True)
    b = write_run(tmp_path / "b", "train-compile", {"eager-sdpa": [(80, 12.5)]}, smoke=True)
    result = gpubench("compare", str(a), str(b), "--fail-on", "tokens_per_s", cwd=tmp_path)
    assert result.code == 0, result.stderr  # 20% lower, but with one repeat a side nothing says it is not noise
    assert "| eager-sdpa | tokens_per_s (tokens/s) | 100 | 80 | 0.800 | no verdict (n=1) |" in result.stdout
    assert "worse" not in result.stdout and "regressed" not in result.stderr
    assert f"{a} is a smoke run" in result.stderr and f"{b} is a smoke run" in result.stderr
    assert "n=1 (one repeat) on a side: no spread is known" in result.stderr
    assert "eager-sdpa tokens_per_s: 100 -> 80 tokens/s with n=1, no spread known: not counted" in result.stderr
    back = gpubench("compare", str(b), str(a), "--fail-on", "tokens_per_s", cwd=tmp_path)
    assert back.code == 0 and "not counted" not in back.stderr  # the better way: nothing to warn about


def test_a_run_compared_with_itself_says_so(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10), (101, 10)]})
    result = gpubench("compare", str(a), str(a), cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    assert "are the same run (train-compile-" in result.stderr and len(result.stderr.splitlines()) == 1


def test_nothing_beyond_noise_is_said_rather_than_an_empty_table(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10), (101, 10)]})
    b = write_run(tmp_path / "b", "train-compile", {"eager-sdpa": [(100.5, 10), (100, 10)]})
    result = gpubench("compare", str(a), str(b), cwd=tmp_path)
    assert result.code == 0 and "no metric of the 2 compared differs beyond noise" in result.stderr


def test_a_partial_run_is_compared_and_said_to_be_partial(tmp_path):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10)]})
    b = write_run(tmp_path / "b", "train-compile", {"eager-sdpa": [(100, 10)]}, finished=False)
    result = gpubench("compare", str(a), str(b), "--all", cwd=tmp_path)
    assert result.code == 0 and "is a partial run (no run_finished)" in result.stderr
    assert "| eager-sdpa | tokens_per_s (tokens/s) | 100 | 100 | 1.000 | within noise |" in result.stdout


@pytest.mark.parametrize("case, says", [
    ("other-workload", "cannot compare a train-compile run with a embed run"),
    ("not-a-run", "not a gpubench run"),
    ("major-2", "unsupported schema_version '2.0'"),
    ("unknown-metric", "--fail-on nope: no such metric in both runs; valid: step_ms, tokens_per_s"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, says):
    a = write_run(tmp_path / "a", "train-compile", {"eager-sdpa": [(100, 10)]})
    b = tmp_path / "b"
    args = []
    if case == "other-workload":
        write_run(b, "embed", {"eager-sdpa": [(100, 10)]})
    elif case == "major-2":
        write_run(b, "train-compile", {"eager-sdpa": [(100, 10)]})
        lines = (b / "results.jsonl").read_text().splitlines()
        record = json.loads(lines[1])
        record["schema_version"] = "2.0"
        (b / "results.jsonl").write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    elif case == "unknown-metric":
        write_run(b, "train-compile", {"eager-sdpa": [(100, 10)]})
        args = ["--fail-on", "nope"]
    result = gpubench("compare", str(a), str(b), *args, cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
