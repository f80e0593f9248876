"""yahma/alpaca-cleaned is found like weights (here: the Hugging Face cache's layout) and its revision is recorded."""

import json

from clirun import gpubench


def test_the_catalog_data_set_is_read_from_the_cache_with_its_revision(tmp_path):
    snapshot = tmp_path / "hub" / "datasets--yahma--alpaca-cleaned" / "snapshots" / "12567cab"
    snapshot.mkdir(parents=True)
    (tmp_path / "hub" / "datasets--yahma--alpaca-cleaned" / "refs").mkdir()
    (tmp_path / "hub" / "datasets--yahma--alpaca-cleaned" / "refs" / "main").write_text("12567cab")
    records = [{"instruction": f"Count to {i}.", "input": "", "output": " ".join(map(str, range(i)))}
               for i in range(1, 61)]
    (snapshot / "alpaca_data_cleaned.json").write_text(json.dumps(records))
    # --smoke's random tiny model, and data_file="" (the study's data set) instead of its synthetic set
    result = gpubench("run", "finetune", "--smoke", "--setups", "lora-mb4", "--set", "data_file=", cwd=tmp_path,
                      env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert result.code == 0, result.stderr[-2000:]
    [row] = [r for r in result.records() if r["kind"] == "result"]
    assert row["info"]["data"] == f"datasets/yahma/alpaca-cleaned at {snapshot}"
    assert row["info"]["data_revision"] == "12567cab"
    # 48 of the 60 records trained on (3 steps x 16), as one-byte tokens: "Count to 7." -> "0 1 2 3 4 5 6"
    assert 48 * 30 < row["metrics"]["train_tokens"]["value"] <= 48 * 96
