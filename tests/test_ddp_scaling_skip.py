"""A setup that needs more GPUs than the host has is a `skipped` row with the reason, never an error."""

from clirun import gpubench


def test_too_few_gpus_is_a_skipped_row_per_setup(tmp_path):
    result = gpubench("run", "ddp-scaling", "--smoke", "--setups", "124m-1gpu,124m-2gpu", "--set", "device=cuda",
                      cwd=tmp_path, timeout=300)
    rows = [(r["setup"], r["status"], r["error"]) for r in result.records() if r["kind"] == "result"]
    assert rows == [("124m-1gpu", "skipped", "needs 1 GPU, this host has 0"),
                    ("124m-2gpu", "skipped", "needs 2 GPUs, this host has 0")]
    assert "Traceback" not in result.stderr
