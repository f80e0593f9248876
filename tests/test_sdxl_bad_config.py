"""A bad sdxl override is one clear line and exit 2, before anything runs."""

import pytest
from clirun import gpubench


@pytest.mark.parametrize(("override", "says"), [
    ("timed_images_b4=6", "timed_images_b4=6: must be a positive multiple of 4"),
    ("architecture=sdxl-turbo", "architecture must be one of sdxl-base, tiny"),
    ("height=100", "multiples of 8"),
])
def test_bad_override(tmp_path, override, says):
    result = gpubench("run", "sdxl", "--smoke", "--set", override, cwd=tmp_path)
    assert result.code == 2
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == "" and not (tmp_path / "gpubench-results").exists()


def test_full_size_needs_the_weights_or_random(tmp_path):
    result = gpubench("run", "sdxl", "--setups", "eager-b1", cwd=tmp_path,
                      env={"GPUBENCH_WEIGHTS_DIR": str(tmp_path), "HF_HUB_CACHE": str(tmp_path / "hub")})
    assert result.code == 2
    assert "stabilityai/stable-diffusion-xl-base-1.0, madebyollin/sdxl-vae-fp16-fix" in result.stderr
    assert "--weights random" in result.stderr
