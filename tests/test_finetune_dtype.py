"""--set dtype=float32 runs the study's loop without bf16 (a GPU or CPU without it): LoRA's base weights in fp32 and
no autocast; the default is the study's bf16."""

from contextlib import ExitStack

import pytest
import torch

from gpubench.workloads import finetune
from gpubench.workloads.finetune import models

SHAPE = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 4,
         "num_kv_heads": 2}
LORA = {"r": 4, "alpha": 8, "dropout": 0.0}


@pytest.mark.parametrize(("dtype", "base", "autocast"), [("bfloat16", torch.bfloat16, True),
                                                         ("float32", torch.float32, False)])
def test_lora_base_weights_and_autocast_follow_the_dtype(dtype, base, autocast):
    with ExitStack() as stack:
        model = models.build("lora", models.Source("random", shape=SHAPE), "cpu", LORA, stack, None, dtype)
    frozen = {p.dtype for p in model.parameters() if not p.requires_grad}
    assert frozen == {base}
    with finetune.half_autocast("cpu", dtype)():
        assert torch.is_autocast_enabled("cpu") is autocast
        if autocast:
            assert torch.get_autocast_dtype("cpu") == torch.bfloat16
