"""gpubench/cli/main.py and the loadgen command share their helpers through cli_common, not through each other."""

from __future__ import annotations

import subprocess
import sys


def test_the_loadgen_command_does_not_import_the_gpubench_cli():
    code = ("import sys, gpubench.cli.loadgen\n"
            "print('gpubench.cli.main' in sys.modules, 'gpubench.cli.common' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
