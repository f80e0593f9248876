"""The launcher ends with gpubench's own summary table per run (headline metrics with spread, speed-up against
the baseline setup, cost) and says at which rate the costs were computed: here the real `gpubench run`
(first-matmul's smoke) behind the fake, priced at L40S's $0.86/h in us-east-1, where the fake runs the job."""

from __future__ import annotations

import pytest
import test_launch_support as support
from test_launch_support import launch

fake, launcher_env = support.fake, support.launcher_env


@pytest.mark.parametrize("fake", [{"minute_s": 2.0}], indirect=True)
def test_summary_shows_the_study_table_and_the_rate(fake, launcher_env, capsys):
    result = launch(capsys, "train-compile", "--gpu", "L40S", "--job-command",
                    "gpubench run first-matmul --smoke --repeats 2")
    assert result.code == 0, result.stderr
    err = result.stderr
    for column in ("setup", "status", "import_torch_s (s)", "first_matmul_s (s)", "warm_matmul_ms (ms)"):
        assert column in err, err
    assert "│ matmul " in err and "2/2" in err  # the setup's row, over both repeats
    assert "--smoke: these numbers test the code path" in err
    assert "costs are at the obtained rate" in err  # the job landed in the region it was priced at
