"""`gpubench run embed --smoke --weights random`: the study's three rates per setup, on the CPU, through the CLI."""

import pytest
from clirun import gpubench

from gpubench.workloads.embed.model import BGE, MAX_POSITIONS, VOCAB_SIZE

PRICE = 0.54


def bert_params(hidden: int, layers: int, ffn: int) -> int:
    """BertModel's parameter count: embeddings, `layers` encoder layers, pooler."""
    embeddings = (VOCAB_SIZE + MAX_POSITIONS + 2) * hidden + 2 * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden * ffn + ffn + hidden + 4 * hidden
    return embeddings + layers * layer + hidden * hidden + hidden


def test_the_bge_table_has_the_published_sizes():
    sizes = {size: bert_params(s.hidden, s.layers, s.ffn) / 1e6 for size, s in BGE.items()}
    assert sizes == pytest.approx({"small": 33.4, "base": 109.5, "large": 335.1}, abs=0.1)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("run")
    return gpubench("run", "embed", "--smoke", "--weights", "random", "--setups", "bge-large-512",
                    "--price", str(PRICE), cwd=cwd)


def results(run) -> dict[str, dict]:
    return {r["setup"]: r for r in run.records() if r["kind"] == "result"}


def test_every_setup_reports_plain_gpu_only_and_tuned_rates(smoke_run):
    assert smoke_run.code == 0, smoke_run.stderr[-3000:]
    rows = results(smoke_run)
    assert list(rows) == ["bge-large-512"]
    for setup, row in rows.items():
        assert row["status"] == "ok" and row["device"] == "cpu"
        m = {k: v["value"] for k, v in row["metrics"].items()}
        # smoke: 32-token passages; every passage is exactly that long after truncation
        assert m["tokens_per_passage"] == 32
        for prefix in ("", "gpu_only_", "tuned_"):
            assert m[f"{prefix}tokens_per_s"] == pytest.approx(m[f"{prefix}passages_per_s"] * 32, rel=1e-9)
        if m["passages_per_s"] <= m["gpu_only_passages_per_s"]:
            assert m["host_bound_share"] == pytest.approx(1 - m["passages_per_s"] / m["gpu_only_passages_per_s"])
            assert 0 <= m["host_bound_share"] < 1
        else:  # two busy cores can time encode() above the model alone in a 0.2 s window: no negative fraction
            assert "host_bound_share" not in m and "not reported" in row["info"]["host_bound_share"]
        assert m["tuned_gain"] == pytest.approx(m["tuned_passages_per_s"] / m["passages_per_s"])
        assert m["tuned_vs_gpu_only"] == pytest.approx(m["tuned_passages_per_s"] / m["gpu_only_passages_per_s"])
        assert m["tuned_batch"] in (16, 32) and m["tuned_workers"] >= 1
        # the catalog's basis prices plain encode(); the workload prices the tuned rate the same way
        assert m["usd_per_1M_passages"] == pytest.approx(PRICE / (m["passages_per_s"] * 3600) * 1e6, rel=1e-9)
        assert m["tuned_usd_per_1M_passages"] == pytest.approx(PRICE / (m["tuned_passages_per_s"] * 3600) * 1e6)
        shape = BGE[setup.split("-")[1]]
        assert m["params_m"] == pytest.approx(bert_params(shape.hidden, 1, shape.ffn) / 1e6, abs=1e-6)  # 1 layer


def test_info_names_the_cpu_the_weights_and_the_batch_probe(smoke_run):
    for row in results(smoke_run).values():
        info = row["info"]
        assert info["cpu_model"] and info["cpu_cores"] >= info["cpu_affinity"] >= 1 and "cpu_quota" in info
        assert info["weights"] == "random" and info["vocab"].endswith("vocab.txt")
        assert info["seq_len"] == 32 and row["dtype"] == "float32"  # a CPU computes in float32 (config: float16)
        assert set(info["tuned_probe_passages_per_s"]) == {"16", "32"}


def test_a_missing_vocabulary_fails_the_setup_with_one_clear_line(tmp_path):
    run = gpubench("run", "embed", "--smoke", "--weights", "random", "--setups", "bge-small-128",
                   "--set", f"vocab={tmp_path / 'nope.txt'}", cwd=tmp_path)
    assert run.code == 1
    row = results(run)["bge-small-128"]
    assert row["status"] == "error" and "nope.txt: no vocab.txt there" in row["error"]


def test_host_bound_share_is_a_fraction_or_absent_with_its_reason():
    from gpubench.workloads.embed import host_bound_share

    assert host_bound_share(250.0, 1000.0) == (0.75, "")
    assert host_bound_share(1000.0, 1000.0) == (0.0, "")
    share, why = host_bound_share(2980.0, 1000.0)  # the -1.98 a loaded smoke run once reported
    assert share is None and "faster than the model alone" in why and "2980" in why
