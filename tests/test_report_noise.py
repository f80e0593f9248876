"""A difference smaller than the measured noise is shown as within noise, never as a win or a bare ratio."""

import pytest
from clirun import gpubench
from test_report_tables import table_rows, write_results

POST_H100_STEP_MS = 152  # the post's train-compile eager-sdpa step on an H100 PCIe (reference.csv)


def report(tmp_path, runs):
    """runs: {(folder, gpu): [step_ms per repeat]} of train-compile's eager-sdpa."""
    for (folder, gpu), steps in runs.items():
        write_results(tmp_path / "runs" / folder, gpu, {"eager-sdpa": [{"step_ms": ms} for ms in steps]})
    result = gpubench("report", str(tmp_path / "runs"), cwd=tmp_path)
    assert result.code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("steps, says", [
    ([152 * 1.04], "within noise of 152 (H100 PCIe)"),  # one run: no spread, the 5% floor
    ([152 * 1.06], "1.06x of 152 (H100 PCIe)"),
    ([159, 161], "1.05x of 152 (H100 PCIe)"),  # median 160, CV 0.9%: noise is the 5% floor, 5.3% is beyond it
    ([140, 180], "within noise of 152 (H100 PCIe)"),  # median 160 too, but CV 17.7%: noise 35%
])
def test_vs_post_is_a_ratio_only_beyond_the_rows_noise(tmp_path, steps, says):
    stdout = report(tmp_path, {("h100", "NVIDIA H100 PCIe"): steps})
    assert table_rows(stdout)[0]["vs post"] == says


@pytest.mark.parametrize("l40s_ms, says", [
    ([244, 246], "- eager-sdpa: NVIDIA H100 PCIe, 152 against 245 ms on NVIDIA L40S"),
    ([161, 161.5], "- eager-sdpa: NVIDIA H100 PCIe, 152 against 161 ms on NVIDIA L40S"),  # 6% apart, CV under 1%
    ([158, 158.2], "- eager-sdpa: within noise (NVIDIA H100 PCIe 152, NVIDIA L40S 158 ms; noise 5%)"),  # 3.9%
])
def test_the_best_gpu_per_setup_is_named_only_beyond_noise(tmp_path, l40s_ms, says):
    stdout = report(tmp_path, {("h100", "NVIDIA H100 PCIe"): [POST_H100_STEP_MS, POST_H100_STEP_MS],
                               ("l40s", "NVIDIA L40S"): l40s_ms})
    lines = stdout.splitlines()
    at = lines.index("Best GPU per setup on step_ms (lower is better; a gap within the measured noise is no win):")
    assert lines[at + 1] == says


@pytest.mark.parametrize("l40s_ms, apart", [(244, "37.7%"), (152 * 1.04, "3.8%")])
def test_one_run_a_side_is_never_within_noise_nor_a_win_but_the_gap_with_no_verdict(tmp_path, l40s_ms, apart):
    stdout = report(tmp_path, {("h100", "NVIDIA H100 PCIe"): [POST_H100_STEP_MS], ("l40s", "NVIDIA L40S"): [l40s_ms]})
    lines = stdout.splitlines()
    at = lines.index("Best GPU per setup on step_ms (lower is better; a gap within the measured noise is no win):")
    assert lines[at + 1] == (f"- eager-sdpa: no verdict (n=1): NVIDIA H100 PCIe 152, NVIDIA L40S {l40s_ms:.3g} ms"
                             f" ({apart} apart; one repeat on a side, no spread to judge by)")


def test_one_gpu_has_no_best_gpu_line(tmp_path):
    assert "Best GPU per setup" not in report(tmp_path, {("h100", "NVIDIA H100 PCIe"): [152, 150]})
