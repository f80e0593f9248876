"""A job that fails says why on the terminal: `gpubench-launch whisper --gpu RTX5090` on a machine without the
study's weights ends in exit 3 with the job's own one-line reason, not only "job failed: exit code 2"."""

from __future__ import annotations

import pytest
import test_launch_support as support
from test_launch_support import launch

from gpubench import exit_codes

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", [{"minute_s": 2.0}], indirect=True)
def test_a_failed_job_shows_its_own_error_line(fake, launcher_env, capsys, tmp_path):
    result = launch(capsys, "whisper", "--gpu", "RTX5090", "--setups", "fw-turbo-fp16-b16")
    assert result.code == exit_codes.JOB_NOT_SUCCEEDED, result.stderr
    [note] = [line for line in result.stderr.splitlines() if "job failed: exit code 2" in line]
    assert note.split("job failed: exit code 2: ", 1)[1].startswith(
        "gpubench: error: whisper needs weights that are not on this machine"), note
