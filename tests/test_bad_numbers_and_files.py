"""Numbers that are not numbers, and files that are not records, are refused or named the same way everywhere:
NaN and infinity are one line and exit 2 wherever a number is taken (gpubench/params.py); a results.jsonl that is
not UTF-8 is one line naming it (report, compare, site), a damaged line in one is named with its file and line
and the rest is read; a dry run refuses a --results-dir that is a file as the real run does; `site --out ''` is
not the current folder. Nothing is written, run or paid for."""

from __future__ import annotations

import json

import pytest
import test_launch_support as support
from clirun import gpubench
from sweep_support import plan_text, sweep, write_plan
from test_launch_support import launch

fake, launcher_env = support.fake, support.launcher_env


def one_line_exit_2(result, prefix: str, says: str) -> str:
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"{prefix}: error: ") and says in line, line
    assert result.stdout == ""
    return line


FINITE = "a finite number"


@pytest.mark.parametrize("args, says", [
    (["run", "train-compile", "--smoke", "--price", "nan"],
     f"--price must be a positive hourly price in USD, {FINITE} (got nan)"),
    (["run", "train-compile", "--smoke", "--price", "inf"],
     f"--price must be a positive hourly price in USD, {FINITE} (got inf)"),
    (["run", "train-compile", "--smoke", "--repeats", "1000000"],
     "--repeats must be a whole number from 1 to 100 (got 1000000)"),
    (["compare", "a", "b", "--noise", "inf"], f"--noise must be a fraction of 0 or more (0.05 is 5%), {FINITE}"),
    (["compare", "a", "b", "--noise", "nan"], f"--noise must be a fraction of 0 or more (0.05 is 5%), {FINITE}"),
    (["loadgen", "--base-url", "http://127.0.0.1:9", "--price", "inf"], "--price must be a positive hourly price"),
    (["site", "runs", "--out", ""], "--out: give a folder name (an empty one would be the current folder)"),
])
def test_gpubench_refuses_a_number_that_is_not_one(tmp_path, args, says):
    one_line_exit_2(gpubench(*args, cwd=tmp_path), "gpubench", says)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("variable, value, says", [
    ("GPUBENCH_PRICE_USD_PER_HOUR", "nan", "GPUBENCH_PRICE_USD_PER_HOUR must be a positive hourly price in USD, a"
                                           " finite number (got nan)"),
    ("GPUBENCH_PRICES_USD_PER_HOUR", "L40S=inf", "entry 'L40S=inf': the price must be a positive hourly price"),
])
def test_a_launchers_price_that_is_not_a_number_is_refused(tmp_path, variable, value, says):
    result = gpubench("run", "first-matmul", "--smoke", cwd=tmp_path, env={variable: value})
    one_line_exit_2(result, "gpubench", says)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, says", [
    (["--max-cost", "inf"], f"--max-cost must be a positive amount in USD, {FINITE} (got inf)"),
    (["--max-cost", "nan"], f"--max-cost must be a positive amount in USD, {FINITE} (got nan)"),
    (["--max-minutes", "inf"], f"--max-minutes must be a positive number of minutes, {FINITE} (got inf)"),
    (["--price", "nan"], f"--price must be a positive hourly price in USD, {FINITE} (got nan)"),
    (["--price", "inf"], f"--price must be a positive hourly price in USD, {FINITE} (got inf)"),
])
def test_the_launcher_refuses_a_number_that_is_not_one(fake, launcher_env, capsys, args, says):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--smoke", *args)
    one_line_exit_2(result, "gpubench-launch", says)
    assert fake.requests == []


@pytest.mark.parametrize("cap", ["inf", "nan", "-inf"])
def test_a_plan_cap_that_is_not_a_number_is_refused(fake, launcher_env, capsys, tmp_path, cap):
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S"], ["--smoke"])], max_usd=cap))
    one_line_exit_2(sweep(capsys, plan), "gpubench-launch", "max_usd must be a positive number of dollars")
    assert fake.requests == []


@pytest.mark.parametrize("command", [["train-compile", "--gpu", "L40S"], ["sweep", "{plan}"]])
def test_a_dry_run_refuses_a_results_dir_that_is_a_file(fake, launcher_env, capsys, tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    plan = write_plan(tmp_path, plan_text([("train-compile", ["L40S"], ["--smoke"])]))
    args = [a.format(plan=plan) for a in command]
    result = launch(capsys, *args, "--smoke", "--results-dir", str(blocker), "--dry-run") if command[0] != "sweep" \
        else launch(capsys, *args, "--results-dir", str(blocker), "--dry-run")
    one_line_exit_2(result, "gpubench-launch", f"results folder {blocker} is a file, not a folder")
    assert blocker.read_text() == "not a folder"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    result = gpubench("run", "first-matmul", "--smoke", "--results-dir", str(root / "results"), cwd=root)
    assert result.code == 0, result.stderr
    [folder] = (root / "results").iterdir()
    return folder


def copy_run(run_folder, folder, damage=None):
    """The run's records in a folder of its own, under a run id of its own (compare refuses a run with itself)."""
    run_id = json.loads((run_folder / "results.jsonl").read_text().splitlines()[0])["run_id"]
    text = (run_folder / "results.jsonl").read_text().replace(run_id, f"{run_id[:-6]}{folder.name[:6]:0<6}")
    lines = text.splitlines()
    folder.mkdir(parents=True)
    if damage == "latin-1":
        (folder / "results.jsonl").write_bytes(("\n".join(lines) + "\n").encode() + "caf\xe9\n".encode("latin-1"))
    elif damage == "line":
        lines.insert(2, lines[2][: len(lines[2]) // 2])  # a record cut in half
        (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    else:
        (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("command", [["report", "{bad}"], ["compare", "{good}", "{bad}"],
                                     ["site", "{bad}", "--out", "{tmp}/site"]])
def test_records_that_are_not_utf8_are_one_line_naming_the_file(run_folder, tmp_path, command):
    bad = copy_run(run_folder, tmp_path / "bad", "latin-1")
    good = copy_run(run_folder, tmp_path / "good")
    args = [a.format(bad=bad, good=good, tmp=tmp_path) for a in command]
    one_line_exit_2(gpubench(*args, cwd=tmp_path), "gpubench",
                    f"{bad / 'results.jsonl'}: not UTF-8 text (byte ")
    assert not (tmp_path / "site").exists()


def test_report_and_compare_name_a_damaged_line_and_read_the_rest(run_folder, tmp_path):
    damaged = copy_run(run_folder, tmp_path / "damaged", "line")
    good = copy_run(run_folder, tmp_path / "good")
    said = f"gpubench:   {damaged / 'results.jsonl'}:3: not JSON ("
    report = gpubench("report", str(damaged), cwd=tmp_path)
    assert report.code == 0 and "first-matmul" in report.stdout
    assert "gpubench: skipped 1 line of 1 stored run (the rest of each run is read)" in report.stderr
    [said] = [line for line in report.stderr.splitlines() if line.startswith(said)]
    assert said.endswith("cut short or edited")
    good_lines = (good / "results.jsonl").read_text().splitlines()
    assert json.loads(good_lines[-1])["kind"] == "run_finished"  # the copy still holds every record
    compared = gpubench("compare", str(good), str(damaged), cwd=tmp_path)
    assert said in compared.stderr.splitlines()


@pytest.mark.parametrize("field, value, says", [
    ("rate", float("inf"), "rate must be a positive number of requests per second (got inf)"),
    ("rate", float("nan"), "rate must be a positive number of requests per second (got nan)"),
    ("timeout_s", float("inf"), "timeout must be a positive number of seconds (got inf)"),
    ("temperature", float("nan"), "temperature must be a finite number, 0 or more (got nan)"),
])
def test_a_load_that_is_not_a_number_is_refused(field, value, says):
    from gpubench.loadgen.spec import LoadSpec, LoadSpecError

    with pytest.raises(LoadSpecError) as refused:
        LoadSpec(base_url="http://127.0.0.1:9", model="m", **{field: value})
    assert str(refused.value) == says
