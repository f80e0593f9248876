"""What `gpubench run finetune` says, in one line and before anything runs, when its inputs are not there."""

from clirun import gpubench


def run(tmp_path, *args):
    env = {"HF_HOME": str(tmp_path / "empty-hf"), "HF_HUB_CACHE": str(tmp_path / "empty-hf" / "hub")}
    result = gpubench("run", "finetune", *args, cwd=tmp_path, env=env)
    assert result.code == 2 and result.stdout == "", result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert not (tmp_path / "gpubench-results").exists() or not any((tmp_path / "gpubench-results").iterdir())
    return lines[0]


def test_no_cached_model_or_data_set_names_both(tmp_path):
    line = run(tmp_path)
    assert "Qwen/Qwen2.5-1.5B-Instruct" in line and "datasets/yahma/alpaca-cleaned" in line
    assert "--weights random" in line


def test_a_local_model_file_still_needs_the_data_set_and_nothing_else(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    line = run(tmp_path, "--set", f"model_file={model}")
    assert "datasets/yahma/alpaca-cleaned" in line and "Qwen/" not in line


def test_a_missing_data_file_is_named(tmp_path):
    line = run(tmp_path, "--smoke", "--set", f"data_file={tmp_path / 'nope.json'}")
    assert "data_file" in line and "nope.json" in line and "no such file" in line


def test_more_steps_than_one_epoch_is_refused(tmp_path):
    line = run(tmp_path, "--smoke", "--set", "steps=4")
    assert "4 steps x 16 examples" in line and "48 training examples" in line
