"""The product's headline: `gpubench-launch whisper --gpu RTX5090 --dry-run` plans the study's run."""

import test_launch_support as support
from test_launch_support import launch

fake, launcher_env = support.fake, support.launcher_env


def test_dry_run_plans_the_whisper_study_on_an_rtx5090(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "whisper", "--gpu", "RTX5090", "--dry-run")
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "command       gpubench run whisper" in out and "--smoke" not in out
    assert "image         ghcr.io/gpubench/whisper:" in out
    assert "keen-hopper-rtx5090-3c4d" in out and "0.69" in out
    assert "max runtime   75 min" in out  # 30 expected minutes x 2 + 15
    assert "nothing was launched" in out
    assert [r.path for r in fake.requests] == ["/api/v1/instances/types"]
