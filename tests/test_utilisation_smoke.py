"""Every ok result of a run carries the utilisation figures and a verdict; summary.md shows the verdict.
train-compile's smoke setup, on the CPU, through the CLI: with sampling, and with it switched off."""

import json

import pytest
from clirun import gpubench

from gpubench.run import utilisation


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}  # switched off, one setup shows it: each setup's sampling is the same code
    for name, setups, env in (("on", "eager-sdpa,eager-eager", {}),
                              ("off", "eager-sdpa", {utilisation.OFF_VARIABLE: "off"})):
        cwd = tmp_path_factory.mktemp(name)
        out[name] = (cwd, gpubench("run", "train-compile", "--smoke", "--setups", setups, "--set", "timed_steps=6",
                                   cwd=cwd, env=env))
    return out


def results(completed):
    return [r for r in completed.records() if r["kind"] == "result"]


def test_every_ok_result_carries_utilisation_and_a_verdict(runs):
    _, completed = runs["on"]
    assert completed.code == 0, completed.stderr[-2000:]
    rows = results(completed)
    assert [r["setup"] for r in rows] == ["eager-sdpa", "eager-eager"]
    for r in rows:
        assert r["status"] == "ok"
        m = r["metrics"]
        assert m["util_samples"]["value"] >= 2 and m["util_samples"]["unit"] == "samples"
        for name in ("host_cpu_pct", "host_cpu_p90_pct", "busiest_thread_pct", "busiest_thread_p90_pct"):
            assert m[name]["unit"] == "% of a core" and m[name]["value"] >= 0
        assert r["utilisation"]["scope"] == "timed"  # train-compile reports its timed phase
        assert r["utilisation"]["cores"] >= 1 and r["utilisation"]["samples"] == m["util_samples"]["value"]
        assert "utilisation" not in r["info"]
        assert r["verdict"]["label"] in ("compute-bound", "host-bound", "undetermined")
        assert r["verdict"]["basis"] and "util_samples" in r["verdict"]["figures"]
        # the workload's own metrics come first; the machine's after them
        assert list(m).index("step_ms") < list(m).index("util_samples")


def test_summary_md_shows_the_verdict_and_what_it_rests_on(runs):
    cwd, completed = runs["on"]
    run_id = completed.records()[0]["run_id"]
    text = (cwd / "gpubench-results" / run_id / "summary.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| setup |"))
    assert header.rstrip(" |").endswith("| verdict")
    verdicts = {r["setup"]: r["verdict"]["label"] for r in results(completed)}
    for setup, label in verdicts.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {setup} |"))
        assert row.rstrip(" |").endswith(label)
        assert f"- {setup} (repeat 1): {label}: " in text
    stored = [json.loads(line) for line in (cwd / "gpubench-results" / run_id / "results.jsonl").open()]
    assert all(r["verdict"]["label"] for r in stored if r["kind"] == "result")


def test_switched_off_no_figures_and_it_says_so(runs):
    _, completed = runs["off"]
    assert completed.code == 0, completed.stderr[-2000:]
    assert [r["setup"] for r in results(completed)] == ["eager-sdpa"]
    for r in results(completed):
        assert not set(r["metrics"]) & set(utilisation.METRICS)
        assert r["utilisation"]["not_sampled"] == f"{utilisation.OFF_VARIABLE}=off" and not r["utilisation"]["samples"]
        assert r["verdict"]["label"] == "undetermined"
