"""The compile break-even and batch comparisons, from result records as the runner hands them over."""

import pytest

from gpubench.schema import Metric, SetupResult
from gpubench.workloads.sdxl import Config, derive


def result(setup, **metrics):
    return SetupResult(run_id="sdxl-20261127T000000Z-abcdef", setup=setup, repeat=1, status="ok",
                       metrics={k: Metric(value=v, unit="s") for k, v in metrics.items()})


def test_the_studys_a6000_row_breaks_even_after_about_220_images():
    # RTX A6000, batch 1: eager 5.79 s, compiled 4.94 s per image, 188 s compile -> "about 220 images"
    out = derive(Config(), [result("eager-b1", s_per_image=5.79, images_per_s=1 / 5.79),
                            result("compile-b1", s_per_image=4.94, images_per_s=1 / 4.94, compile_s=188.0)])
    assert out["compile-b1"]["saved_s_per_image"] == pytest.approx(0.85)
    assert out["compile-b1"]["break_even_images"] == pytest.approx(188 / 0.85)
    assert out["compile-b1"]["time_saved_pct"] == pytest.approx(100 * 0.85 / 5.79)
    assert set(out) == {"compile-b1"}  # nothing at batch 4 without both batch-4 setups


def test_a_compiled_setup_that_is_slower_never_breaks_even():
    out = derive(Config(), [result("eager-b4", s_per_image=2.0, images_per_s=0.5),
                            result("compile-b4", s_per_image=2.2, images_per_s=1 / 2.2, compile_s=130.0)])
    assert out["compile-b4"]["saved_s_per_image"] == pytest.approx(-0.2)
    assert "break_even_images" not in out["compile-b4"]


def test_batch_4_throughput_against_batch_1_per_mode():
    # H100 eager: 2.25 s (batch 1) vs 1.94 s (batch 4) per image -> +16%, as the study says
    out = derive(Config(), [result("eager-b1", s_per_image=2.25, images_per_s=1 / 2.25),
                            result("eager-b4", s_per_image=1.94, images_per_s=1 / 1.94)])
    assert out == {"eager-b4": {"throughput_vs_b1_pct": pytest.approx(100 * (2.25 / 1.94 - 1))}}
    assert round(out["eager-b4"]["throughput_vs_b1_pct"]) == 16
