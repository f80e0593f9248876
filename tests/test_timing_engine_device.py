"""measure/device.resolve for an engine other than torch: "auto" asks that engine how many GPUs it can use."""

from __future__ import annotations

from gpubench.measure import device


def test_auto_follows_the_engines_own_gpu_count():
    assert device.resolve("auto", gpu_count=lambda: 2) == "cuda"
    assert device.resolve("auto", gpu_count=lambda: 0) == "cpu"
    assert device.resolve("cpu", gpu_count=lambda: 2) == "cpu"  # an explicit device is as given
