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
    assert note.endswith("or run with --weights random (same compute, random values)"), note  # whole, not cut


def test_the_failed_setups_own_errors_come_before_the_platforms_trailer():
    """What a job's output ends with (srun's trailer, a traceback's tail) is not why it failed when its records
    say: each failed setup's error, setups with the same error named together."""
    from gpubench.launcher.results import failure_reason
    from gpubench.launcher.slurm.job import slurm_noise
    from gpubench.schema import SetupResult

    cuda = "AssertionError: Torch not compiled with CUDA enabled"
    results = [SetupResult(run_id="r", setup=s, repeat=1, status="error", error=cuda, duration_s=1.0)
               for s in ("eager-sdpa", "eager-eager")] + [
        SetupResult(run_id="r", setup="compile-sdpa", repeat=1, status="ok", duration_s=1.0)]
    trailer = ["  eager-sdpa: ERROR " + cuda, "srun: error: vm: task 0: Exited with exit code 1"]
    assert failure_reason(results, trailer, slurm_noise) == f"eager-sdpa, eager-eager: {cuda}"
    # Without records, the last error-like line that is the job's own, however long.
    long = "gpubench: error: " + "x" * 400 + " or run with --weights random"
    assert failure_reason([], [long, "srun: error: vm: task 0: Exited with exit code 2"], slurm_noise) == long
    assert failure_reason([], ["Traceback (most recent call last):", "ValueError: bad"], None) == "ValueError: bad"
