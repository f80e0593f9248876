"""`gpubench report`: stored runs merged across GPUs and repeats into the post's tables."""

import pytest
from clirun import gpubench

from gpubench.schema import Environment, GpuInfo, Metric, RunFinished, RunStarted, SetupResult, to_line


def write_run(folder, gpu, price, rows, finished=True, workload="train-compile", config=None):
    """A run folder as a run on `gpu` writes it; rows: [(setup, tokens_per_s, achieved_tflops)]."""
    write_results(folder, gpu, {setup: [{"step_ms": 8192 / tps * 1000, "tokens_per_s": tps, "achieved_tflops": tflops}]
                                for setup, tps, tflops in rows},
                  price=price, finished=finished, workload=workload, config=config or {"dtype": "bfloat16"})


def write_results(folder, gpu, setups, price=None, finished=True, workload="train-compile", config=None, info=None,
                  dtype=None):
    """A run folder of `workload` on `gpu`; setups: {setup: [{metric: value} per repeat]}, units as the workload
    declares them (and the runner's pct_of_peak); info, dtype: the non-numeric facts of every result."""
    from gpubench.catalog import WORKLOADS
    from gpubench.workload import load

    declared = load(WORKLOADS.get(workload)).metrics if workload in WORKLOADS else {}
    units = {name: (m.unit, m.better) for name, m in declared.items()} | {"pct_of_peak": ("%", "higher")}
    run_id = f"{workload}-20261130T000000Z-{abs(hash(folder.name)) % 10**6:06d}"
    folder.mkdir(parents=True)
    env = Environment(python="3.12", platform="linux", gpus=[GpuInfo(name=gpu)] if gpu else [])
    results = [SetupResult(run_id=run_id, setup=setup, repeat=repeat, status="ok", info=info or {}, dtype=dtype,
                           metrics={name: Metric(value=value, unit=units.get(name, ("", None))[0],
                                                 better=units.get(name, ("", None))[1])
                                    for name, value in values.items()}) for setup, repeats in setups.items()
        for repeat, values in enumerate(repeats, 1)]
    records = [RunStarted(run_id=run_id, workload=workload, study="s", setups=list(setups), repeats=1,
                          smoke=False, config=config or {}, environment=env, price_usd_per_hour=price), *results]
    if finished:
        records.append(RunFinished(run_id=run_id, status="ok", duration_s=1.0, summary=[]))
    (folder / "results.jsonl").write_text("".join(to_line(r) + "\n" for r in records))


def table_rows(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[1:]]


def test_runs_are_pooled_per_gpu_and_price_and_costed_at_their_own_price(tmp_path):
    write_run(tmp_path / "runs" / "l40s-a", "NVIDIA L40S", 0.54, [("eager-sdpa", 33581, 100)])
    write_run(tmp_path / "runs" / "l40s-b", "NVIDIA L40S", 0.54, [("eager-sdpa", 30000, 90)])
    write_run(tmp_path / "runs" / "l40s-eu", "NVIDIA L40S", 1.15, [("eager-sdpa", 33000, 98)])
    write_run(tmp_path / "runs" / "h100", "NVIDIA H100 PCIe", 3.86, [("eager-sdpa", 54022, 378)])
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    rows = {row["GPU"]: row for row in table_rows(result.stdout)}
    assert set(rows) == {"NVIDIA L40S ($0.54/h)", "NVIDIA L40S ($1.15/h)", "NVIDIA H100 PCIe"}
    l40s, eu, h100 = rows["NVIDIA L40S ($0.54/h)"], rows["NVIDIA L40S ($1.15/h)"], rows["NVIDIA H100 PCIe"]
    assert l40s["$/hour"] == "0.54" and l40s["n"] == "2/2" and eu["$/hour"] == "1.15" and eu["n"] == "1/1"
    # two runs at one price are repeats: M tokens per $ = tokens/s x 3600 / price / 1e6, the median of both;
    # the run at $1.15 is a row of its own, costed at its price, not pooled into a "±24% (noisy)" cell
    per_usd = [33581 * 3600 / 0.54 / 1e6, 30000 * 3600 / 0.54 / 1e6]
    assert l40s["1M_tokens_per_usd (1M tokens/USD)"] == f"{sum(per_usd) / 2:.0f} ±8% (noisy)"
    assert eu["1M_tokens_per_usd (1M tokens/USD)"] == f"{33000 * 3600 / 1.15 / 1e6:.0f}"  # 103.3
    assert h100["1M_tokens_per_usd (1M tokens/USD)"] == f"{54022 * 3600 / 3.86 / 1e6:.1f}"  # the post's 50
    assert h100["vs post"] == "within noise of 152 (H100 PCIe)"  # step_ms 151.6 against the post's H100 row
    assert h100["TFLOP/s"] == "378" and h100["of peak"] == "50%"  # 378 of the H100 PCIe's 756 dense bf16 TFLOP/s
    # (100/362, 90/362) = (27.6%, 24.9%): median 26.2%, CV 7.4%
    assert l40s["TFLOP/s"] == "95 ±7% (noisy)" and l40s["of peak"] == "26.2% ±7% (noisy)"


def test_error_rows_carry_their_reason_and_smoke_runs_are_said_to_be_smoke(tmp_path):
    from gpubench.schema import SetupResult, to_line

    folder = tmp_path / "runs" / "smoke"
    write_run(folder, "cpu", None, [("eager-sdpa", 80, 0.1)], config={"steps": 2})
    records = (folder / "results.jsonl").read_text().splitlines()
    records[0] = records[0].replace('"smoke":false', '"smoke":true').replace('"setups":["eager-sdpa"]',
                                                                           '"setups":["eager-sdpa","compile-sdpa"]')
    run_id = records[0].split('"run_id":"')[1].split('"')[0]
    failed = SetupResult(run_id=run_id, setup="compile-sdpa", repeat=1, status="error",
                         error="RuntimeError: Triton | inductor found no C compiler" + " (details)" * 20)
    (folder / "results.jsonl").write_text("\n".join([*records[:-1], to_line(failed), records[-1]]) + "\n")
    write_run(tmp_path / "runs" / "full", "NVIDIA L40S", 0.54, [("eager-sdpa", 33581, 100)], config={"steps": 20})
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    rows = {(row["GPU"], row["setup"]): row for row in table_rows(result.stdout)}
    assert rows[("cpu (steps=2)", "eager-sdpa")]["status"] == "ok (smoke run)"
    failed_cell = rows[("cpu (steps=2)", "compile-sdpa")]["status"]
    assert failed_cell.startswith("error: RuntimeError: Triton / inductor found no C compiler (details)")
    assert failed_cell.endswith("… (smoke run)") and len(failed_cell) <= 120 + len(" (smoke run)")
    assert rows[("NVIDIA L40S (steps=20)", "eager-sdpa")]["status"] == "ok"
    assert "Rows marked smoke run come from --smoke runs" in result.stdout


def test_a_partial_run_is_shown_and_said_to_be_partial(tmp_path):
    write_run(tmp_path / "a", "NVIDIA L40S", 0.54, [("eager-sdpa", 33581, 100)], finished=False)
    result = gpubench("report", str(tmp_path / "a"), cwd=tmp_path)
    assert result.code == 0
    assert table_rows(result.stdout)[0]["status"] == "ok (partial run)"
    assert "partial runs (no run_finished)" in result.stderr


@pytest.mark.parametrize("case, says", [
    ("empty", "no gpubench runs there"),
    ("missing", "no such folder"),
    ("unknown-workload", "unknown workload 'mystery'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, says):
    target = tmp_path / "store"
    if case == "empty":
        target.mkdir()
    elif case == "unknown-workload":
        write_run(target / "x", "NVIDIA L40S", 0.54, [("eager-sdpa", 1, 1)], workload="mystery")
    result = gpubench("report", str(target), cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


def test_a_report_reads_the_runs_under_an_s3_prefix(tmp_path, s3, s3_bucket, s3_env):
    from gpubench.stores import deliver, parse_store

    write_run(tmp_path / "local" / "l40s", "NVIDIA L40S", 0.54, [("eager-sdpa", 33581, 100)])
    write_run(tmp_path / "local" / "h100", "NVIDIA H100 PCIe", 3.86, [("eager-sdpa", 54022, 378)])
    for folder in (tmp_path / "local").iterdir():
        ok, message = deliver(folder, parse_store(f"s3://{s3_bucket}/team"))
        assert ok, message
    result = gpubench("report", f"s3://{s3_bucket}/team", cwd=tmp_path, env=s3.env())
    assert result.code == 0, result.stderr
    assert {row["GPU"] for row in table_rows(result.stdout)} == {"NVIDIA L40S", "NVIDIA H100 PCIe"}
    empty = gpubench("report", f"s3://{s3_bucket}/nothing-here", cwd=tmp_path, env=s3.env())
    assert empty.code == 2 and "no gpubench runs there" in empty.stderr
