"""The GSM8K pass on a real llama-server, as ollama-vs-vllm's llamacpp-*-gsm8k setups run it."""

from __future__ import annotations

import pytest
from llamacpp_support import ABSENT, BUILT, MODEL

from gpubench.measure.gpu_memory import MemoryTracker
from gpubench.workload import SetupContext
from gpubench.workloads import serving_common as common

pytestmark = pytest.mark.skipif(not BUILT, reason=ABSENT)


def test_gsm8k_pass_scores_every_question_with_every_token_streamed(tiny_llamacpp):
    server = tiny_llamacpp.running()
    session = common.Session("llamacpp", server, MODEL, facts={})
    ctx = SetupContext(run_id="r", setup="llamacpp-q4km-gsm8k", repeat=1, smoke=True, weights="random",
                       progress=lambda *a, **k: None)
    ctx.memory = MemoryTracker(ctx.info, None, "not sampled (a CPU)")  # what the worker gives every setup
    metrics = common.measure_gsm8k(session, ctx, questions=8, concurrency=8, max_tokens=24)
    assert metrics["gsm8k_total"] == 8 and 0 <= metrics["gsm8k_correct"] <= 8
    assert metrics["gsm8k_wall_s"] > 0 and metrics["tokens_streamed_pct"] == 100.0
    answers = ctx.info["gsm8k_answers"]
    assert len(answers) == 8 and all(len(a) == 3 for a in answers)
