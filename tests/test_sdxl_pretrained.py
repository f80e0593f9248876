"""With weights on disk, the study's loading code runs: the fp16 variant of the base pipeline plus the fp16-fix VAE.

The "checkpoints" are the tiny random pipeline saved the way the Hub repos are laid out (fp16 variant files in
the base repo, a plain VAE repo), so the real from_pretrained path runs on the CPU.
"""

import pytest
from clirun import gpubench

from gpubench.workloads.sdxl.components import BASE_REPO, VAE_REPO, random_pipeline

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("weights")
    pipe = random_pipeline("tiny", "cpu", torch.float32)
    pipe.to(torch.float16).save_pretrained(root / BASE_REPO, variant="fp16")
    random_pipeline("tiny", "cpu", torch.float32).vae.save_pretrained(root / VAE_REPO)
    return root


def test_loads_the_base_pipeline_with_the_separate_vae(tmp_path, weights_dir):
    # architecture=sdxl-base: the smoke sizes, but the study's weights are asked for (and found on disk)
    result = gpubench("run", "sdxl", "--smoke", "--setups", "eager-b1", "--set", "architecture=sdxl-base",
                      cwd=tmp_path, env={"GPUBENCH_WEIGHTS_DIR": str(weights_dir)})
    assert result.code == 0, result.stderr[-3000:]
    row = [r for r in result.records() if r["kind"] == "result"][0]
    assert row["status"] == "ok"
    info = row["info"]
    assert info["weights"] == "pretrained" and info["variant"] == "fp16"
    assert info[BASE_REPO] == str(weights_dir / BASE_REPO)
    assert info["vae_loaded_from"] == str(weights_dir / VAE_REPO)  # not the base repo's own vae/
    assert row["metrics"]["unet_params_m"]["value"] < 5  # the saved tiny UNet, not a 2.57B random one
