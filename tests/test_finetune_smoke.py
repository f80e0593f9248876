"""`gpubench run finetune --smoke`: all six setups of the study's loop, on the CPU, in subprocesses."""

import importlib.util

import pytest
from clirun import gpubench, run_folder, third_party_lines

# SMOKE's tiny Qwen2 shape: vocab 512, hidden 64, FFN 128, 2 layers, 4 heads, 2 KV heads (head 16), tied embeddings.
FULL_PARAMS = 512 * 64 + 2 * ((64 * 64 + 64) + 2 * (64 * 32 + 32) + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
# rank 16 on q, k, v, o, gate, up, down: r x (in + out) each, per layer.
LORA_PARAMS = 2 * 16 * ((64 + 64) + 2 * (64 + 32) + (64 + 64) + 2 * (64 + 128) + (128 + 64))
HAS_BNB = importlib.util.find_spec("bitsandbytes") is not None


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("run")
    result = gpubench("run", "finetune", "--smoke", "--price", "1.14", cwd=cwd)
    result.cwd = cwd
    rows = {r["setup"]: r for r in result.records() if r["kind"] == "result"}
    return result, rows


def test_the_terminal_holds_gpubench_lines_and_run_log_the_libraries(smoke):
    result, _ = smoke
    assert third_party_lines(result.stderr) == []  # bitsandbytes and transformers print while these setups run
    log = run_folder(result.stderr, result.cwd).joinpath("run.log").read_text().splitlines()
    worker_lines = [line.split("] ", 1)[1] for line in log if line.startswith(("[full-mb4] ", "[qlora-mb4] "))]
    worker_lines = [line for line in worker_lines if line.strip()]
    assert worker_lines and not [line for line in worker_lines if line in result.stderr]


def values(row):
    return {name: metric["value"] for name, metric in row["metrics"].items()}


def test_every_setup_reports_a_row(smoke):
    result, rows = smoke
    assert list(rows) == ["full-mb4", "lora-mb4", "qlora-mb4", "full-mb8", "lora-mb8", "qlora-mb8", "lora-tuned"]
    for setup in ("full-mb4", "lora-mb4", "full-mb8", "lora-mb8", "lora-tuned"):
        assert rows[setup]["status"] == "ok", rows[setup]["error"]
    if HAS_BNB:  # bitsandbytes 0.50's CPU backend runs NF4
        assert result.code == 0, result.stderr[-2000:]
        assert rows["qlora-mb4"]["status"] == rows["qlora-mb8"]["status"] == "ok"
    else:
        assert result.code == 1
        for setup in ("qlora-mb4", "qlora-mb8"):
            assert rows[setup]["status"] == "error"
            assert rows[setup]["error"].startswith("RuntimeError: qlora needs bitsandbytes")


def test_trainable_parameters_are_the_whole_model_or_the_lora_adapters(smoke):
    _, rows = smoke
    for setup, row in rows.items():
        if row["status"] != "ok":
            continue
        m = values(row)
        expected = FULL_PARAMS if setup.startswith("full") else LORA_PARAMS
        assert m["trainable_params_m"] * 1e6 == pytest.approx(expected)
        if setup.startswith("full"):
            assert m["trainable_pct"] == 100
        else:
            assert m["trainable_pct"] == pytest.approx(100 * LORA_PARAMS / (FULL_PARAMS + LORA_PARAMS))


def test_speed_loss_memory_and_cost_are_measured(smoke):
    _, rows = smoke
    ok = {setup: values(row) for setup, row in rows.items() if row["status"] == "ok"}
    tokens = {m["train_tokens"] for m in ok.values()}
    assert len(tokens) == 1 and 0 < tokens.pop() <= 48 * 96  # the same 48 examples, each cut at 96 tokens
    for setup, m in ok.items():
        assert m["tokens_per_s"] == pytest.approx(m["train_tokens"] / m["train_s"], rel=1e-9)
        assert m["eval_loss_before"] > 0 and m["eval_loss_after"] > 0
        assert m["eval_loss_drop"] == pytest.approx(m["eval_loss_before"] - m["eval_loss_after"])
        assert m["peak_mem_gib"] > 0.1 and rows[setup]["info"]["peak_mem"].startswith("host")
        # the post's "GPU cost of training": training time at the hourly price
        assert m["usd_per_training_run"] == pytest.approx(m["train_s"] * 1.14 / 3600, rel=1e-9)
        info = rows[setup]["info"]
        assert rows[setup]["dtype"] == "bfloat16"
        assert info["data"].startswith("synthetic alpaca-format set of 56 records")
        assert info["model"].startswith("random weights at vocab_size 512")
        if setup == "lora-tuned":  # the same 16 examples a step, packed in one row
            assert info["examples_per_step"] == 16 and info["packing"].startswith("one row per step")
        else:
            assert (info["micro_batch"], info["accumulation"]) == ((4, 4) if setup.endswith("mb4") else (8, 2))


def test_lora_is_compared_with_full_at_the_same_micro_batch(smoke):
    result, rows = smoke
    derived = {r["setup"]: values(r) for r in result.records() if r["kind"] == "derived"}
    full, lora = values(rows["full-mb4"]), values(rows["lora-mb4"])
    assert derived["lora-mb4"]["speedup_vs_full"] == pytest.approx(full["train_s"] / lora["train_s"], rel=1e-9)
    assert derived["lora-mb4"]["speedup_vs_mb8"] == pytest.approx(
        values(rows["lora-mb8"])["train_s"] / lora["train_s"], rel=1e-9)
    assert "speedup_vs_full" not in derived.get("full-mb4", {})
    if HAS_BNB:
        assert derived["qlora-mb4"]["loss_before_over_lora"] == pytest.approx(
            values(rows["qlora-mb4"])["eval_loss_before"] - lora["eval_loss_before"])


@pytest.mark.skipif(not HAS_BNB, reason="bitsandbytes is not installed: no qlora row to count")
def test_qlora_counts_its_4bit_base_like_lora_and_both_skip_the_frozen_weight_gradients(smoke):
    _, rows = smoke
    per_token = {setup: rows[setup]["info"]["flops_per_token"] for setup in ("full-mb4", "lora-mb4", "qlora-mb4")}
    assert per_token["qlora-mb4"] == per_token["lora-mb4"]  # bitsandbytes' 4-bit matmuls are counted
    assert per_token["lora-mb4"] < per_token["full-mb4"]


def test_tuned_trains_the_same_examples_and_is_judged_on_the_same_heldout_set(smoke):
    result, rows = smoke
    derived = {r["setup"]: r for r in result.records() if r["kind"] == "derived"}
    assert rows["lora-mb4"]["status"] == rows["lora-tuned"]["status"] == "ok", result.stderr[-2000:]
    study, tuned = values(rows["lora-mb4"]), values(rows["lora-tuned"])
    assert tuned["examples_per_step"] == 16
    assert tuned["train_tokens"] == study["train_tokens"]  # the same examples, counted the same way
    # the same model before training, scored on the same held-out micro-batches: the same number
    assert tuned["eval_loss_before"] == pytest.approx(study["eval_loss_before"], abs=1e-6)
    assert tuned["eval_loss_after"] < tuned["eval_loss_before"]
    assert abs(tuned["eval_loss_after"] - study["eval_loss_after"]) < 0.01
    loss_vs_study = derived["lora-tuned"]["metrics"]["loss_vs_study"]["value"]
    assert loss_vs_study == pytest.approx(tuned["eval_loss_after"] - study["eval_loss_after"])
    assert derived["lora-tuned"]["metrics"]["speedup_vs_study"]["value"] == pytest.approx(
        tuned["tokens_per_s"] / study["tokens_per_s"])
    info = rows["lora-tuned"]["info"]
    assert info["examples_per_step"] == 16 and info["cuda_graphs"] == "off"
    assert rows["lora-tuned"]["verdict"]["label"] and "util_samples" in rows["lora-tuned"]["metrics"]
