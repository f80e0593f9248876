"""What a serving load result derives: its level's prompt seed (serving_common) and the streamed share of tokens
(loadgen.metrics)."""

from gpubench.loadgen import prompts
from gpubench.loadgen.client import RequestRecord
from gpubench.loadgen.metrics import streamed_pct
from gpubench.loadgen.spec import LoadSpec
from gpubench.workloads import serving_common as common
from gpubench.workloads import vllm_fp8, vllm_prefix_cache


def test_each_level_has_its_own_prompts_and_shared_prefix():
    def built(level: str, seed: int = 42):
        spec = LoadSpec(base_url="http://127.0.0.1:1", model="m", prefix_tokens=64, input_tokens=16,
                        seed=common.level_seed(seed, level))
        return prompts.build(spec, 4)

    c1, c8 = built("p1000-c1"), built("p1000-c16")
    assert c1[0].body[:64] == c1[3].body[:64]  # one shared prefix within a level
    assert c1[0].body[:64] != c8[0].body[:64]  # and a fresh one at the next level
    assert not {tuple(p.body) for p in c1} & {tuple(p.body) for p in c8}
    assert built("p1000-c1") == c1 and built("p1000-c1", seed=7) != c1  # reproducible from the run seed


def test_modes_compared_at_a_level_get_the_same_level_name():
    """bf16/fp8 and cache on/off are compared at a level: their setups must map to one prompt seed."""
    fp8 = {s: s.split("-", 1)[1] for s in vllm_fp8.SETUPS}
    assert fp8["bf16-c8"] == fp8["fp8-c8"] == "c8"
    prefix = {s: s.split("-", 1)[1] for s in vllm_prefix_cache.SETUPS}
    assert prefix["on-p4000-c64"] == prefix["off-p4000-c64"] != prefix["on-p4000-c16"]


def record(counted: int | None, arrived: int, ok: bool = True) -> RequestRecord:
    return RequestRecord(index=0, ok=ok, completion_tokens=counted, tokens_received=arrived)


def test_streamed_share_is_arrived_over_counted_tokens():
    # the H200 run's case: the server counted 256, 22 arrived as text
    assert streamed_pct([record(256, 22), record(256, 256)]) == 100 * (22 + 256) / 512
    assert streamed_pct([record(16, 16), record(16, 3, ok=False)]) == 100.0  # failed requests left out
    assert streamed_pct([record(None, 5)]) is None  # no server count: nothing to compare with


def test_the_streamed_share_is_a_headline_column_of_every_serving_study():
    from gpubench.workloads import ollama_vs_vllm, vllm_serving

    for module in (vllm_serving, vllm_fp8, vllm_prefix_cache, ollama_vs_vllm):
        assert "tokens_streamed_pct" in module.HEADLINE and module.METRICS["tokens_streamed_pct"].better == "higher"
