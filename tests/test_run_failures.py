"""A setup that does not fit or fails is a result row; the run goes on and says so in its exit code."""

import pytest
from clirun import gpubench, run_folder, third_party_lines

from gpubench.run.worker import is_oom, one_line


def test_a_setup_that_does_not_fit_is_an_oom_row_and_the_next_setup_still_runs(tmp_path):
    # A 10^11-token vocabulary: the embedding alone would be 25 TB, which no allocator will give.
    result = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa,eager-eager",
                      "--set", "vocab_size=100000000000", cwd=tmp_path)
    assert result.code == 1
    rows = [r for r in result.records() if r["kind"] == "result"]
    assert [(r["setup"], r["status"]) for r in rows] == [("eager-sdpa", "oom"), ("eager-eager", "oom")]
    assert "allocate" in rows[0]["error"]
    finished = result.records()[-1]
    assert finished["status"] == "failed" and {s["status"] for s in finished["summary"]} == {"oom"}


@pytest.mark.parametrize("verbose", [False, True])
def test_an_error_is_an_error_row_with_a_one_line_message(tmp_path, verbose):
    result = gpubench("run", "train-compile", "--smoke", "--setups", "eager-sdpa", "--set", "device=cuda:7",
                      *(["--verbose"] if verbose else []), cwd=tmp_path)
    assert result.code == 1
    row = [r for r in result.records() if r["kind"] == "result"][0]
    assert row["status"] == "error" and "\n" not in row["error"]
    assert (row["device"], row["device_name"]) == ("cuda:7", None)  # where it was to run; no such GPU to name
    assert "Traceback" in run_folder(result.stderr, tmp_path).joinpath("run.log").read_text()  # the whole story
    if verbose:
        assert "Traceback" in result.stderr
    else:  # the person reads the row, and where the rest is
        assert third_party_lines(result.stderr) == [] and "are in run.log (--verbose shows them)" in result.stderr


def test_oom_classification():
    torch = pytest.importorskip("torch")
    assert is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    with pytest.raises(RuntimeError) as cpu:
        torch.empty(10**14, dtype=torch.uint8)
    assert is_oom(cpu.value)
    assert not is_oom(ValueError("bad shape"))
    assert one_line(RuntimeError("first line\nsecond")) == "RuntimeError: first line"


def test_runs_from_a_folder_that_holds_a_gpubench_source_tree(tmp_path):
    # The repo root holds gpubench/ without workloads/ inside (pyproject maps it): workers must not import it.
    decoy = tmp_path / "gpubench"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('imported the decoy from the working directory')\n")
    result = gpubench("run", "first-matmul", "--smoke", cwd=tmp_path)
    assert result.code == 0, result.stderr[-2000:]
    assert [r["status"] for r in result.records() if r["kind"] == "result"] == ["ok"]
