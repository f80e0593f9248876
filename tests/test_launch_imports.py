"""The launcher knows workloads only through the catalog and the schema: it never imports
gpubench.workloads, gpubench.run.runner or gpubench.run.worker. Its CLI module loads none of the SDK, rich
or asyncssh until a command runs (so --help and `gpubench list` stay fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("gpubench.workloads", "gpubench.run.runner", "gpubench.run.worker")
LAUNCHER = Path(__file__).resolve().parent.parent / "launcher"


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_cli_import_is_light():
    modules = loaded_after("import gpubench.launcher.cli")
    assert not {m for m in modules if m.startswith(FORBIDDEN)}
    assert not {m for m in modules if m.split(".")[0] in ("runcrate", "rich", "asyncssh", "boto3", "httpx")}


def test_no_launcher_module_imports_workload_code():
    names = sorted(".".join(p.relative_to(LAUNCHER).with_suffix("").parts) for p in LAUNCHER.rglob("[!_]*.py"))
    assert {"cli", "runcrate.jobs", "runcrate.instance", "runcrate.follow", "slurm.job", "sweep.run"} <= set(names)
    modules = loaded_after("\n".join(f"import gpubench.launcher.{name}" for name in names))
    assert not {m for m in modules if m.startswith(FORBIDDEN)}
    assert "gpubench.catalog" in modules and "gpubench.schema" in modules
