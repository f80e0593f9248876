"""Finding a study's weights on disk, and saying which are missing when they are not."""

import pytest

from gpubench.weights import MissingWeights, resolve, revision


def _cache_snapshot(hub, repo, files=("config.json",)):
    """A Hugging Face cache entry, in the cache's own on-disk layout."""
    repo_dir = hub / f"models--{repo.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text("0123abcd")
    snapshot = repo_dir / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for name in files:
        (snapshot / name).write_text("{}")
    return snapshot


def test_weights_are_found_in_the_hf_cache_and_in_a_weights_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    snapshot = _cache_snapshot(tmp_path / "hf" / "hub", "BAAI/bge-small-en-v1.5")
    volume = tmp_path / "volume"
    (volume / "Qwen" / "Qwen2.5-7B-Instruct").mkdir(parents=True)
    (volume / "Qwen" / "Qwen2.5-7B-Instruct" / "config.json").write_text("{}")
    monkeypatch.setenv("GPUBENCH_WEIGHTS_DIR", str(volume))
    found = resolve("x", ["BAAI/bge-small-en-v1.5", "Qwen/Qwen2.5-7B-Instruct"], "auto")
    assert found == {"BAAI/bge-small-en-v1.5": snapshot,
                     "Qwen/Qwen2.5-7B-Instruct": volume / "Qwen" / "Qwen2.5-7B-Instruct"}


def test_missing_weights_are_named_with_the_ways_to_provide_them(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("GPUBENCH_WEIGHTS_DIR", raising=False)
    _cache_snapshot(tmp_path / "hf" / "hub", "BAAI/bge-small-en-v1.5")
    (tmp_path / "hf" / "hub" / "models--BAAI--bge-base-en-v1.5" / "refs").mkdir(parents=True)  # a broken entry
    with pytest.raises(MissingWeights) as err:
        resolve("embed", ["BAAI/bge-small-en-v1.5", "BAAI/bge-base-en-v1.5", "BAAI/bge-large-en-v1.5"], "auto")
    message = str(err.value)
    assert err.value.missing == ["BAAI/bge-base-en-v1.5", "BAAI/bge-large-en-v1.5"]
    assert "\n" not in message and "--weights random" in message and "WEIGHTS=bake" in message


def test_random_weights_need_nothing_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    assert resolve("embed", ["BAAI/bge-small-en-v1.5"], "random") == {"BAAI/bge-small-en-v1.5": None}


def test_data_sets_are_found_beside_models_and_carry_their_revision(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("GPUBENCH_WEIGHTS_DIR", raising=False)
    hub = tmp_path / "hf" / "hub"
    _cache_snapshot(hub, "yahma/alpaca-cleaned")  # a model of that name must not stand in for the data set
    with pytest.raises(MissingWeights, match="datasets/yahma/alpaca-cleaned"):
        resolve("finetune", ["datasets/yahma/alpaca-cleaned"], "auto")
    data_dir = hub / "datasets--yahma--alpaca-cleaned"
    (data_dir / "refs").mkdir(parents=True)
    (data_dir / "refs" / "main").write_text("feedc0de")
    (data_dir / "snapshots" / "feedc0de").mkdir(parents=True)
    (data_dir / "snapshots" / "feedc0de" / "alpaca_data_cleaned.json").write_text("[]")
    found = resolve("finetune", ["datasets/yahma/alpaca-cleaned"], "auto")["datasets/yahma/alpaca-cleaned"]
    assert found == data_dir / "snapshots" / "feedc0de" and revision(found) == "feedc0de"
    volume = tmp_path / "volume" / "datasets" / "yahma" / "alpaca-cleaned"
    volume.mkdir(parents=True)
    (volume / "alpaca_data_cleaned.json").write_text("[]")
    monkeypatch.setenv("GPUBENCH_WEIGHTS_DIR", str(tmp_path / "volume"))
    found = resolve("finetune", ["datasets/yahma/alpaca-cleaned"], "auto")["datasets/yahma/alpaca-cleaned"]
    assert found == volume and revision(found) is None
