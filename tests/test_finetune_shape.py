"""Random weights at the study's shape have the post's parameter counts: 1,543.7 M, and 18.5 M trainable in LoRA."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from gpubench.workloads.finetune import Config, models


def test_qwen25_15b_shape_and_its_lora_adapters():
    from peft import LoraConfig, get_peft_model

    with torch.device("meta"):  # shapes only, no memory
        model = AutoModelForCausalLM.from_config(models.qwen_config(Config().shape()))
    assert sum(p.numel() for p in model.parameters()) == 1_543_714_304  # the post: 1,543.7 M, embeddings tied
    lora = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, task_type="CAUSAL_LM",
                                            target_modules=models.LORA_TARGETS))
    trainable, total = lora.get_nb_trainable_parameters()
    assert trainable == 18_464_768  # the post: 18.5 M trainable parameters, 1.2% of the model
    assert 100 * trainable / total == pytest.approx(1.18, abs=0.01)
