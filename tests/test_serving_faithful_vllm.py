"""Random-weight serving on a real vLLM (the CPU build in .venv-vllm/): every token the server counts arrives as
streamed text, and load levels on one server do not share prompts.

One server for the module: the smoke's tiny Qwen2 (Qwen2.5's 152,064-id vocabulary, random weights) with the
full-vocabulary tokenizer, prefix caching at vLLM's default (on). One user at a time, so vLLM never has to merge
several tokens into one chunk (its output collector does when the API server falls behind).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import LoadSpec
from gpubench.servers.tiny_model import write_qwen2
from gpubench.servers.vllm import VllmFlags, VllmServer
from gpubench.workload import SetupContext
from gpubench.workloads import serving_common as common

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"
pytestmark = pytest.mark.skipif(not VLLM_PYTHON.exists(),
                                reason=".venv-vllm is absent: bash tools/vllm_cpu_venv.sh builds it (.ci/run does)")
MODEL = "tiny-qwen2"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm")
    folder = write_qwen2(tmp / "model")
    flags = VllmFlags(model=str(folder), served_model_name=MODEL, max_model_len=2048, enforce_eager=True)
    server = VllmServer(flags, tmp / "vllm.log", python=str(VLLM_PYTHON), extra_env={"VLLM_CPU_KVCACHE_SPACE": "1"},
                        ready_timeout_s=900)
    server.start()
    yield common.Session("vllm", server, MODEL, tokenizer=str(folder))
    server.stop()


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_every_counted_completion_token_arrives_as_streamed_text(session, endpoint):
    run = run_load(LoadSpec(base_url=session.base_url, model=MODEL, endpoint=endpoint, users=1, requests=4, warmup=1,
                            input_tokens=48, output_tokens=96, ignore_eos=True, tokenizer=session.tokenizer, seed=5))
    counts = [(r.completion_tokens, r.tokens_received) for r in run.records]
    assert counts == [(96, 96)] * 4
    assert common.streamed_pct(run.records) == 100.0 and run.metrics()["usage_mismatches"] == 0


def context(setup: str) -> SetupContext:
    return SetupContext(run_id="t", setup=setup, repeat=0, smoke=True, weights="random", progress=lambda *a, **k: None)


def test_load_levels_on_one_server_send_fresh_prompts(session):
    """c1 then c4 at one run seed, as vllm-serving runs them: c4 finds nothing of c1's in the prefix cache.
    The same level again (the old behaviour: one seed for every level) finds its prompts there."""
    def level(name: str, users: int) -> tuple[dict, dict]:
        ctx = context(name)
        metrics = common.measure_load(session, ctx, level=name, seed=42, endpoint="completions", users=users,
                                      requests=4, warmup=1, input_tokens=256, output_tokens=4, ignore_eos=True)
        return metrics, ctx.info

    first, first_info = level("c1", 1)
    second, second_info = level("c4", 4)
    assert first["server_prompt_tokens"] == second["server_prompt_tokens"] == 5 * 256  # warm-up + 4 timed
    assert second["prefix_cache_hit_rate"] < 5  # random ids: no whole 16-token block in common
    assert first_info["prompt_seed"]["seed"] != second_info["prompt_seed"]["seed"]
    assert second_info["prompt_seed"]["from"] == "run seed 42, load level 'c4'"
    again, _ = level("c1", 4)
    assert again["prefix_cache_hit_rate"] > 80  # every block of c1's prompts is still cached
    assert first["tokens_streamed_pct"] == second["tokens_streamed_pct"] == 100.0
