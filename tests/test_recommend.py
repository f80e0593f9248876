"""`gpubench recommend`: GPUs ranked by cost per unit of a study's headline, ties by the noise rule, too few runs said.

A synthetic store of sdxl runs (tools/synthetic_runs.py): on the H200 ($3.50/h) compile-b4 makes 7 images/s, on the
H100 ($2.50/h) 4.9: $0.139 and $0.142 per 1k images, 2% apart with CVs under 1%, so within the 5% floor: a tie. Each
GPU's slower eager-b1 setup is dearer and is not its answer. The L40S has one run of one repeat: no spread, not
ranked. Only the H200 carries energy per image.
"""

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clirun import gpubench

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from synthetic_runs import write_run  # noqa: E402

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
H200, H100, L40S = "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"


def store(root: Path) -> Path:
    bounded = {"compile-b4": {"verdict": "compute-bound", "verdict_basis": "synthetic"}}
    for day, (gpu, price, rate) in enumerate([(H200, 3.5, 7.0), (H100, 2.5, 4.9)]):
        for run in range(2):  # two runs of two repeats: pooled, n=4
            values = {"compile-b4": [{"images_per_s": rate * f} for f in (0.995, 1.005)],
                      "eager-b1": [{"images_per_s": rate / 3 * f} for f in (0.99, 1.01)]}
            if gpu == H200:
                for repeat in values["compile-b4"]:
                    repeat["j_per_image"] = 400.0
            write_run(root / f"{gpu[-4:]}-{run}", "sdxl", gpu, price, DAY0 + timedelta(days=day, hours=run), values,
                      progress=1, info=bounded)
    write_run(root / "l40s", "sdxl", L40S, 0.86, DAY0, {"compile-b4": [{"images_per_s": 1.9}]}, progress=1)
    write_run(root / "other", "train-compile", H200, 3.5, DAY0, {"eager-sdpa": [{"tokens_per_s": 9e4}]}, progress=1)
    return root


def rows(stdout: str) -> dict[str, dict[str, str]]:
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return {r["GPU"]: r for r in (dict(zip(header, [c.strip() for c in line.strip("|").split("|")], strict=True))
                                  for line in lines[1:])}


def test_ranks_by_cost_with_a_planted_tie_and_a_gpu_with_one_run(tmp_path):
    result = gpubench("recommend", "sdxl", str(store(tmp_path / "store")), cwd=tmp_path)
    assert result.code == 0, result.stderr
    found = rows(result.stdout)
    assert list(found) == [H200, H100, L40S]
    assert found[H200]["rank"] == "1" and found[H200]["setup"] == "compile-b4"
    assert found[H100]["rank"] == f"1 (within noise of {H200})" and found[H100]["setup"] == "compile-b4"
    assert found[L40S]["rank"] == "too few runs to rank (n=1)"
    assert found[H200]["cost (USD/1k images)"] == f"{3.5 / 3600 / 7.0 * 1000:.3g}"
    assert found[H100]["cost (USD/1k images)"] == f"{2.5 / 3600 / 4.9 * 1000:.3g}"
    assert found[H200]["n"] == "4" and found[H200]["$/hour"] == "3.5 (stored with its latest run)"
    assert found[H200]["energy (J/image)"] == "400" and found[H100]["energy (J/image)"] == "–"
    assert found[H200]["bounded by"] == "compute-bound" and found[L40S]["bounded by"] == "-"
    assert (f"- cheapest per unit: {H200} (compile-b4) at $0.139 per 1k images, within noise of {H100}; fastest:"
            f" {H200} (compile-b4) at 7 images/s; least energy: {H200} (compile-b4) at 400 J/image") in result.stdout
    assert "prices: as stored with the runs" in result.stdout


def test_current_prices_from_the_runcrate_api_when_a_key_is_set(tmp_path):
    from fake_runcrate.fake import FakeRuncrate

    with FakeRuncrate() as fake:
        env = {"RUNCRATE_API_KEY": fake.api_key, "RUNCRATE_BASE_URL": fake.base_url}
        result = gpubench("recommend", "sdxl", str(store(tmp_path / "store")), cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    found = rows(result.stdout)
    assert found[H100]["$/hour"] == "2.49 (Runcrate H100 now)"  # the fake's H100 1-GPU rate
    assert found[H100]["cost (USD/1k images)"] == f"{2.49 / 3600 / 4.9 * 1000:.3g}"
    assert found[H200]["$/hour"] == "3.5 (stored with its latest run)"  # no H200 on offer there
    assert "prices: current Runcrate prices (GET /instances/types" in result.stdout
    assert fake.api_key not in result.stdout + result.stderr


def test_an_s3_prefix_is_a_source(tmp_path, s3, s3_bucket, s3_env):
    from gpubench.stores import deliver, parse_store

    for folder in sorted(store(tmp_path / "local").iterdir()):
        ok, message = deliver(folder, parse_store(f"s3://{s3_bucket}/team"))
        assert ok, message
    result = gpubench("recommend", "sdxl", f"s3://{s3_bucket}/team", cwd=tmp_path, env=s3.env())
    assert result.code == 0, result.stderr
    assert list(rows(result.stdout)) == [H200, H100, L40S]


def test_a_latency_target_keeps_only_the_load_levels_that_met_it(tmp_path):
    # c32 is the cheaper level but its p99 TPOT (120 ms) misses the Server target (100 ms): c8 is the answer
    for run in range(2):
        values = {"c8": [{"output_tokens_per_s": 800 * f, "ttft_ms_p99": 90, "tpot_ms_p99": 14} for f in (1, 1.01)],
                  "c32": [{"output_tokens_per_s": 2400 * f, "ttft_ms_p99": 700, "tpot_ms_p99": 120}
                          for f in (1, 1.01)]}
        write_run(tmp_path / "store" / f"r{run}", "vllm-serving", H200, 3.5, DAY0 + timedelta(hours=run), values,
                  progress=1)
    plain = gpubench("recommend", "vllm-serving", str(tmp_path / "store"), cwd=tmp_path)
    at_target = gpubench("recommend", "vllm-serving", str(tmp_path / "store"), "--slo", "server", cwd=tmp_path)
    assert plain.code == at_target.code == 0, plain.stderr + at_target.stderr
    assert rows(plain.stdout)[H200]["setup"] == "c32" and rows(at_target.stdout)[H200]["setup"] == "c8"
    assert "latency target: p99 TTFT <= 2,000 ms and p99 TPOT <= 100 ms" in at_target.stdout
    strict = gpubench("recommend", "vllm-serving", str(tmp_path / "store"), "--slo", "ttft=50,tpot=10", cwd=tmp_path)
    assert strict.code == 0 and f"no load level met the latency target on: {H200}" in strict.stdout


@pytest.mark.parametrize("args, says", [
    (["sdxll", "{store}"], "unknown workload 'sdxll'"),
    (["sdxl", ""], "an empty SOURCE"),
    (["sdxl", "{empty}"], "no gpubench runs there"),
    (["whisper", "{store}"], "no whisper runs there (runs of: sdxl, train-compile)"),
    (["sdxl", "{store}", "--metric", "nope"], "--metric nope: not in the sdxl runs; valid: images_per_s"),
    (["sdxl", "{store}", "--slo", "fast"], "--slo 'fast': use one of server, interactive or ttft=MS,tpot=MS"),
    (["sdxl", "{store}", "--slo", "server"], "--slo: sdxl is not a serving study"),
    (["vllm-serving", "{store}", "--slo", ""], "--slo '': empty; use one of server, interactive or ttft=MS,tpot=MS"),
    (["vllm-serving", "{store}", "--slo", " "], "--slo ' ': empty"),
    (["vllm-serving", "{store}", "--slo", "ttft=" + "9" * 400 + ",tpot=100"], "must be positive, finite numbers of ms"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "empty").mkdir()
    given = [a.format(store=store(tmp_path / "store"), empty=tmp_path / "empty") for a in args]
    result = gpubench("recommend", *given, cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and says in result.stderr, result.stderr


def test_without_a_price_the_gpus_are_ranked_on_the_headline_and_it_says_so(tmp_path):
    for gpu, rate in ((H200, 7.0), (L40S, 2.0)):
        write_run(tmp_path / "store" / gpu[-4:], "sdxl", gpu, None, DAY0,
                  {"compile-b4": [{"images_per_s": rate * f} for f in (0.99, 1.01)]}, progress=1)
    result = gpubench("recommend", "sdxl", str(tmp_path / "store"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert f"- best images_per_s (no price to cost it): {H200} (compile-b4)" in result.stdout
    assert [r["rank"] for r in rows(result.stdout).values()] == ["1", "2"]
    assert rows(result.stdout)[L40S]["cost (USD/1k images)"] == "-"


def test_a_seconds_headline_picks_and_ranks_the_fewest_seconds(tmp_path):
    # cold-start's cost basis is total_s (seconds per start): lower is better, for the setup and for the rank
    for gpu, warm, evicted in ((H200, 16.0, 24.0), (L40S, 30.0, 40.0)):
        write_run(tmp_path / "store" / gpu[-4:], "cold-start", gpu, None, DAY0, {
            "cache-warm": [{"total_s": warm * f} for f in (0.99, 1.01)],
            "cache-evicted": [{"total_s": evicted * f} for f in (0.99, 1.01)]}, progress=1)
    result = gpubench("recommend", "cold-start", str(tmp_path / "store"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    found = rows(result.stdout)
    assert list(found) == [H200, L40S] and {r["setup"] for r in found.values()} == {"cache-warm"}
    assert f"fastest: {H200} (cache-warm)" in result.stdout
