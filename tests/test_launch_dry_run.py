"""--dry-run: the plan from /instances/types (types, $/hour, expected duration and cost, image,
command) and nothing launched."""

from __future__ import annotations

import test_launch_support as support
from test_launch_support import launch

fake, launcher_env = support.fake, support.launcher_env


def test_dry_run_prints_the_plan_and_launches_nothing(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--gpu", "A100-80GB:2", "--smoke", "--dry-run")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "command       gpubench run train-compile --smoke" in out
    assert "image         ghcr.io/gpubench/train-compile:" in out
    assert "max runtime   19 min" in out  # the smoke run's safety net: 2 expected minutes x 2 + 15
    for type_id in ("calm-lovelace-l40s-5e6f", "calm-lovelace-l40s-eu-7a8b", "swift-curie-a100-80gb-x2-1e2f"):
        assert type_id in out
    assert "0.86" in out and "3.28" in out
    # Priced as what it runs: the smoke run's 2 expected minutes at the first candidate's $0.86/h; at most its
    # 19 min safety net at the dearest $3.28/h (the full study would be 8 minutes, $0.115, at most 31 min, $1.695).
    assert "0.029" in out and "1.039" in out and "0.115" not in out
    assert "nothing was launched" in out
    assert [r.path for r in fake.requests] == ["/api/v1/instances/types"]
    assert not (tmp_path / "gpubench-results").exists()


def test_dry_run_each_shows_one_run_per_gpu(fake, launcher_env, capsys):
    result = launch(capsys, "first-matmul", "--gpu", "L40S", "--gpu", "RTX5090", "--dry-run")
    assert result.code == 0, result.stderr
    assert result.stdout.count("first-matmul-") >= 2
    assert "via           instance (container instances)" in result.stdout
    assert "keen-hopper-rtx5090-3c4d" in result.stdout


def test_gpus_lists_the_offer(fake, launcher_env, capsys):
    result = launch(capsys, "gpus", "--deployment", "container")
    assert result.code == 0, result.stderr
    assert "RTX5090" in result.stdout and "0.69" in result.stdout
    assert "H100" not in result.stdout  # VMs only
