"""A --set the job's `gpubench run` would refuse is refused by the launcher first, with the same check (the job's
own `gpubench run --check`): one line, exit 2, no API request at all, in --dry-run too; a good one is planned."""

from __future__ import annotations

import pytest
import test_launch_support as support
from test_launch_support import launch

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "launch"])
@pytest.mark.parametrize("args, fragments", [
    (["whisper", "--gpu", "L40S", "--set", "nosuch=1"], ["--set nosuch: unknown config field", "beam_size"]),
    (["train-compile", "--gpu", "L40S", "--set", "batch=-4"], ["--set batch=-4: batch must be an integer >= 1"]),
    (["embed", "--gpu", "L40S", "--set", "dtype=float99"], ["dtype must be one of bfloat16, float16, float32"]),
    (["train-compile", "--gpu", "L40S", "--smoke", "--set", "device=tpu"], ["device must be auto"]),
])
def test_a_set_the_job_would_refuse_sends_no_request(fake, launcher_env, capsys, tmp_path, dry_run, args, fragments):
    result = launch(capsys, *args, *(["--dry-run"] if dry_run else []))
    assert result.code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("gpubench-launch: error: ") and "nothing was submitted" in line
    for fragment in fragments:
        assert fragment in line
    assert fake.requests == []
    assert not any(tmp_path.iterdir())  # no run folder


def test_a_good_set_is_planned(fake, launcher_env, capsys):
    result = launch(capsys, "whisper", "--gpu", "L40S", "--set", "beam_size=3", "--dry-run")
    assert result.code == 0, result.stderr
    assert "--set beam_size=3" in result.stdout + result.stderr
