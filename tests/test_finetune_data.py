"""The fine-tuning data path: alpaca records -> chat template -> answer-only labels -> padded micro-batches."""

import json

import pytest

from gpubench.workloads.finetune import data


@pytest.fixture(scope="module")
def tokenizer():
    return data.byte_tokenizer()


def test_labels_cover_the_answer_and_its_end_of_turn_only(tokenizer):
    record = {"instruction": "Name a colour.", "input": "Not red.", "output": "Blue."}
    [example] = data.tokenize([record], tokenizer, max_len=512)
    answer = [t for t in example.labels if t != data.IGNORE]
    prompt_len = example.labels.index(answer[0])
    assert all(t == data.IGNORE for t in example.labels[:prompt_len])
    assert example.labels[prompt_len:] == example.input_ids[prompt_len:]
    assert tokenizer.decode(example.input_ids[:prompt_len]) == (
        "<|im_start|>user\nName a colour.\n\nNot red.<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.decode(answer) == "Blue.<|im_end|>\n"


def test_examples_are_cut_at_max_len(tokenizer):
    record = {"instruction": "Say it.", "input": "", "output": "x" * 100}
    [example] = data.tokenize([record], tokenizer, max_len=40)
    assert len(example.input_ids) == len(example.labels) == 40


def test_micro_batches_pad_each_to_its_own_longest_and_mask_the_padding():
    examples = [data.Example([1, 2, 3], [-100, 2, 3]), data.Example([4], [4]), data.Example([5, 6], [-100, 6])]
    first, second = list(data.micro_batches(examples, 2, pad_id=0))
    assert first["input_ids"].tolist() == [[1, 2, 3], [4, 0, 0]]
    assert first["labels"].tolist() == [[-100, 2, 3], [4, -100, -100]]
    assert first["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert second["input_ids"].tolist() == [[5, 6]]  # padded to its own longest, not the first batch's


def test_the_split_is_a_seeded_shuffle_train_then_held_out():
    records = [{"instruction": str(i), "input": "", "output": str(i)} for i in range(50)]
    train, heldout = data.shuffle_split(records, seed=42, n_train=30, n_heldout=10)
    again, _ = data.shuffle_split(records, seed=42, n_train=30, n_heldout=10)
    other, _ = data.shuffle_split(records, seed=7, n_train=30, n_heldout=10)
    assert len(train) == 30 and len(heldout) == 10 and train == again and train != other
    assert not {r["instruction"] for r in train} & {r["instruction"] for r in heldout}
    assert [r["instruction"] for r in train] != [str(i) for i in range(30)]
    with pytest.raises(data.DataError, match="50 records"):
        data.shuffle_split(records, seed=42, n_train=45, n_heldout=10)


def test_the_synthetic_set_has_the_studys_token_count(tokenizer):
    """4,000 synthetic records at 512 tokens: the study's 753,486 tokens, within 2% (one fixed seed)."""
    records = data.synthetic_records(4300, seed=42, tokenizer=tokenizer)
    assert set(records[0]) == {"instruction", "input", "output"}
    assert 0.3 < sum(bool(r["input"]) for r in records) / len(records) < 0.5
    train, _ = data.shuffle_split(records, seed=42, n_train=4000, n_heldout=300)
    examples = data.tokenize(train, tokenizer, max_len=512)
    tokens = sum(len(e.input_ids) for e in examples)
    assert tokens == pytest.approx(753_486, rel=0.02)
    assert 0.01 < sum(len(e.input_ids) == 512 for e in examples) / len(examples) < 0.06  # a few reach the cut
    assert min(sum(t != data.IGNORE for t in e.labels) for e in examples) >= 2


def test_alpaca_files_load_as_json_or_json_lines_and_bad_ones_say_why_in_one_line(tmp_path):
    records = [{"instruction": "a", "input": "", "output": "b"}, {"instruction": "c", "input": "d", "output": "e"}]
    (tmp_path / "list.json").write_text(json.dumps(records))
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert data.load_records(tmp_path / "list.json") == data.load_records(tmp_path / "lines.jsonl") == records
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "alpaca_data_cleaned.json").write_text(json.dumps(records))
    assert data.load_records(folder) == records
    (tmp_path / "bad.json").write_text('[{"instruction": "a", "text": "b"}]')
    with pytest.raises(data.DataError) as err:
        data.load_records(tmp_path / "bad.json")
    assert "record 0 is not alpaca-format" in str(err.value) and "\n" not in str(err.value)
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(data.DataError, match="not JSON"):
        data.load_records(tmp_path / "broken.json")
