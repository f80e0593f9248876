"""lora-tuned (workloads/finetune/tuned.py): the study's examples per step, packed without leaking across
examples. Its run against lora-mb4 (the same examples and held-out set) is checked on the finetune smoke's rows
(test_finetune_smoke.py)."""

from gpubench.workloads import finetune
from gpubench.workloads.finetune import tuned as finetune_tuned
from gpubench.workloads.finetune.data import IGNORE, Example


def test_examples_per_step_are_the_studys():
    assert finetune_tuned.examples_per_step(finetune.Config()) == finetune.EXAMPLES_PER_STEP == 16
    assert finetune_tuned.examples_per_step(finetune.Config(micro_batch=2, accumulation=3)) == 6


def test_packing_restarts_positions_and_never_learns_across_examples():
    a = Example([1, 2, 3], [IGNORE, 2, 3])
    b = Example([4, 5], [IGNORE, 5])
    row = finetune_tuned.pack([a, b], IGNORE)
    assert row["input_ids"].tolist() == [[1, 2, 3, 4, 5]]
    assert row["position_ids"].tolist() == [[0, 1, 2, 0, 1]]
    assert row["labels"].tolist() == [[IGNORE, 2, 3, IGNORE, 5]]
    assert row["example"].tolist() == [0, 0, 0, 1, 1]
    mask = finetune_tuned.block_causal_mask(row["example"])[0, 0].int().tolist()
    assert mask == [[1, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [1, 1, 1, 0, 0],
                    [0, 0, 0, 1, 0],
                    [0, 0, 0, 1, 1]]


def test_padding_a_row_changes_neither_its_tokens_attention_nor_loss():
    row = finetune_tuned.pack([Example([1, 2, 3], [IGNORE, 2, 3])], IGNORE)
    padded = finetune_tuned.pad_row(row, pad_id=0, ignore=IGNORE, bucket=4)
    assert padded["input_ids"].tolist() == [[1, 2, 3, 0]] and padded["labels"].tolist() == [[IGNORE, 2, 3, IGNORE]]
    assert padded["example"].tolist() == [0, 0, 0, -1] and padded["position_ids"].tolist() == [[0, 1, 2, 0]]
    assert finetune_tuned.pad_row(padded, 0, IGNORE, bucket=4) is padded  # already a multiple


def test_a_packed_row_gives_each_example_the_loss_it_has_alone():
    """The block-diagonal mask and restarted positions make a packed forward equal to separate forwards."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    a, b = Example([5, 6, 7, 8], [IGNORE, 6, 7, 8]), Example([9, 10, 11], [IGNORE, IGNORE, 11])
    row = finetune_tuned.pad_row(finetune_tuned.pack([a, b], IGNORE), pad_id=0, ignore=IGNORE, bucket=16)
    inputs = finetune_tuned.model_inputs(row, "cpu")
    with torch.no_grad():
        packed = model(**{k: v for k, v in inputs.items() if k != "labels"}, use_cache=False).logits[0, :7]
        alone = [model(input_ids=torch.tensor([e.input_ids]), use_cache=False).logits[0] for e in (a, b)]
        torch.testing.assert_close(packed, torch.cat(alone), rtol=1e-4, atol=1e-4)
        # the module the training steps call (eager on a CPU, graphed on a GPU): the loss of both examples alone
        loss = finetune_tuned.packed_loss(model, "cpu")(*[row[k] for k in finetune_tuned.INPUTS])
        together = finetune_tuned.pack([a, b], IGNORE)
        expected = model(input_ids=together["input_ids"], position_ids=together["position_ids"],
                         labels=together["labels"],
                         attention_mask=finetune_tuned.block_causal_mask(together["example"])).loss
    torch.testing.assert_close(loss.float(), expected.float(), rtol=2e-2, atol=2e-2)  # bf16 autocast against fp32
