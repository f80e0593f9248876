"""The random checkpoint: Qwen2.5-7B-Instruct's tensors and files, loadable by transformers, reused when unchanged."""

import json

import pytest

from gpubench.workloads.cold_start import checkpoint

QWEN_7B = checkpoint.Shape(hidden_size=3584, num_layers=28, num_heads=28, num_kv_heads=4, intermediate_size=18944,
                           vocab_size=152064, shards=4)
TINY = checkpoint.Shape(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128,
                        vocab_size=1024, shards=4)


def test_the_7b_shape_has_the_real_models_tensors_and_size():
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**checkpoint.config_json(QWEN_7B))
    with torch.device("meta"):  # the architecture at full size, without allocating it
        model = AutoModelForCausalLM.from_config(config)
    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    assert dict(checkpoint.tensors(QWEN_7B)) == expected
    total = sum(checkpoint._numel(dims) * 2 for _, dims in checkpoint.tensors(QWEN_7B))
    assert total == pytest.approx(15.23e9, rel=1e-3)  # the study: 15.24 GB on disk in 4 shards
    shards = checkpoint.split_shards(QWEN_7B)
    sizes = [sum(checkpoint._numel(d) * 2 for _, d in group) for group in shards]
    assert len(shards) == 4 and max(sizes) < 1.1 * total / 4


def test_the_written_checkpoint_loads_in_the_hub_cache_layout(tmp_path):
    import torch
    from huggingface_hub import snapshot_download
    from transformers import AutoModelForCausalLM, AutoTokenizer

    written = checkpoint.write(tmp_path, TINY)
    path = snapshot_download(checkpoint.REPO_ID, cache_dir=tmp_path, local_files_only=True,
                             allow_patterns=["*.json", "*.safetensors", "*.txt"])
    model, info = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert model.config.num_key_value_heads == 2 and model.dtype == torch.bfloat16
    weights = list(model.parameters())
    assert all(torch.isfinite(w).all() for w in weights) and weights[0].float().std() > 0.005  # random, finite
    tok = AutoTokenizer.from_pretrained(path)
    text = tok.apply_chat_template([{"role": "user", "content": "Say hello in five words."}],
                                   add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are Qwen") and text.endswith("<|im_start|>assistant\n")
    ids = tok(text)["input_ids"]
    special = TINY.special_ids
    assert ids.count(special["<|im_start|>"]) == 3 and ids.count(special["<|im_end|>"]) == 2
    assert len(ids) < 40  # the prompt's words are single tokens, as in Qwen's own vocabulary
    assert model.generation_config.eos_token_id == [special["<|im_end|>"], special["<|endoftext|>"]]
    blobs = (tmp_path / checkpoint.repo_folder(tmp_path).name / "blobs").iterdir()
    assert sum(b.stat().st_size for b in blobs if b.stat().st_size > 0) > written["weight_bytes"]


def test_the_same_shape_is_reused_and_another_one_rewritten(tmp_path):
    first = checkpoint.write(tmp_path, TINY)
    marker = checkpoint.repo_folder(tmp_path) / checkpoint.MARKER
    stamp = marker.stat().st_mtime_ns
    again = checkpoint.write(tmp_path, TINY)
    assert (first["reused"], again["reused"]) == (False, True) and marker.stat().st_mtime_ns == stamp
    wider = checkpoint.write(tmp_path, checkpoint.Shape(**{**TINY.__dict__, "hidden_size": 128}))
    assert wider["reused"] is False and json.loads(marker.read_text())["shape"]["hidden_size"] == 128
    snapshots = list((checkpoint.repo_folder(tmp_path) / "snapshots").iterdir())
    assert len(snapshots) == 1  # the old shape is gone, not left beside the new one


def test_a_half_written_checkpoint_is_not_reused(tmp_path):
    checkpoint.write(tmp_path, TINY)
    shard = next((checkpoint.repo_folder(tmp_path) / "snapshots").glob("*/model-00002-of-00004.safetensors"))
    shard.resolve().write_bytes(b"cut short")
    assert checkpoint.write(tmp_path, TINY)["reused"] is False
    assert shard.stat().st_size > 100


def test_a_shape_the_tokenizer_cannot_fit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="vocab_size must be above"):
        checkpoint.write(tmp_path, checkpoint.Shape(**{**TINY.__dict__, "vocab_size": 100}))
    with pytest.raises(ValueError, match="num_heads"):
        checkpoint.write(tmp_path, checkpoint.Shape(**{**TINY.__dict__, "num_heads": 5}))
