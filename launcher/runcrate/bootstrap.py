"""first-matmul on a stock template: the instance's launch script installs what the benchmark needs
before running it, as the study did (uv, then torch, then gpubench; "first CUDA op" includes it).

Each step is timed on the instance and printed as its own Progress record (phase "bootstrap <step>",
message "<ok|present|failed> <seconds> s"), so the run folder keeps it and the launch record gets a
`bootstrap_<step>_s` metric per step. A step whose tool is already there says "present" and costs
only the check, so a prepared template (given with --template, which skips all of this) and a stock
one measure the same way.

Where packages come from, from the launcher's environment (all optional):
  GPUBENCH_BOOTSTRAP_INDEX_URL   package index for uv and gpubench ("none": only the find-links folder)
  GPUBENCH_BOOTSTRAP_FIND_LINKS  a wheel folder or URL on the instance's side (uv --find-links)
  GPUBENCH_BOOTSTRAP_TORCH       torch requirement (default: the images' pin, torch==2.8.0)
  GPUBENCH_BOOTSTRAP_TORCH_INDEX torch's index (default: PyTorch's CUDA 12.8 wheels)
  GPUBENCH_BOOTSTRAP_GPUBENCH    gpubench requirement (default: gpubench==<the launcher's version>)
  GPUBENCH_BOOTSTRAP_PYTHON      the template's Python (default python3); a virtual environment is used
                                 as it is, any other Python gets one made from it (system packages kept)
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from gpubench.schema import SCHEMA_VERSION

STEPS = ("uv", "python", "torch", "gpubench")
PHASE = "bootstrap"
FAILED_EXIT = 97


def _launcher_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpubench")
    except PackageNotFoundError:
        return "0.1.0"


@dataclass(frozen=True)
class BootstrapSource:
    index_url: str | None = None
    find_links: str | None = None
    torch: str = "torch==2.8.0"
    torch_index: str = "https://download.pytorch.org/whl/cu128"
    gpubench: str | None = None
    python: str = "python3"

    @classmethod
    def from_env(cls) -> BootstrapSource:
        get = os.environ.get
        return cls(
            index_url=get("GPUBENCH_BOOTSTRAP_INDEX_URL") or None,
            find_links=get("GPUBENCH_BOOTSTRAP_FIND_LINKS") or None,
            torch=get("GPUBENCH_BOOTSTRAP_TORCH") or cls.torch,
            torch_index=get("GPUBENCH_BOOTSTRAP_TORCH_INDEX") or cls.torch_index,
            gpubench=get("GPUBENCH_BOOTSTRAP_GPUBENCH") or None,
            python=get("GPUBENCH_BOOTSTRAP_PYTHON") or cls.python,
        )

    def options(self, index: str | None) -> list[str]:
        """uv's source options for one step; index None: the default index (PyPI)."""
        out = []
        if self.index_url == "none":
            out.append("--no-index")
        elif index:
            out += ["--index-url", index]
        if self.find_links:
            out += ["--find-links", self.find_links]
        return out


def bootstrap_script(source: BootstrapSource) -> str:
    """Bash that installs, times and reports each step, then leaves PATH pointing at the environment
    that has gpubench. A failed step stops the script (exit 97) after reporting it."""
    q = shlex.quote
    general = " ".join(q(o) for o in source.options(source.index_url))
    torch_opts = " ".join(q(o) for o in source.options(source.index_url or source.torch_index))
    gpubench = source.gpubench or f"gpubench=={_launcher_version()}"
    pip_uv = "--no-index" if source.index_url == "none" else (
        f"--index-url {q(source.index_url)}" if source.index_url else "")
    if source.find_links:
        pip_uv += f" --find-links {q(source.find_links)}"
    return f"""# gpubench-launch: bootstrap a stock template (uv, torch, gpubench), each step timed.
gb_now() {{ if [ -n "${{EPOCHREALTIME:-}}" ]; then echo "$EPOCHREALTIME"; else date +%s.%N; fi; }}
gb_report() {{  # step, status, seconds: one Progress record
  local record='{{"schema_version":"{SCHEMA_VERSION}","run_id":"%s","ts":"%s","kind":"progress",'
  printf "$record"'"phase":"{PHASE} %s","message":"%s %s s"}}\\n' \
    "$GPUBENCH_RUN_ID" "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" "$1" "$2" "$3"
}}
gb_step() {{  # a step function returns 0 (installed), 10 (already present) or anything else (failed)
  local name=$1 t0 rc status
  t0=$(gb_now)
  "gb_$name" >&2
  rc=$?
  case $rc in 0) status=ok ;; 10) status=present ;; *) status=failed ;; esac
  gb_report "$name" "$status" "$(awk -v a="$t0" -v b="$(gb_now)" 'BEGIN {{ printf "%.3f", b - a }}')"
  if [ "$status" = failed ]; then echo "gpubench bootstrap: step $name failed (exit $rc)" >&2; exit {FAILED_EXIT}; fi
}}
gb_has() {{ "$GB_PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }}
gb_uv() {{
  command -v uv >/dev/null 2>&1 && return 10
  {{ "{source.python}" -m pip install -q --user {pip_uv} uv || curl -LsSf https://astral.sh/uv/install.sh | sh; }} \
    && export PATH="$HOME/.local/bin:$PATH" && command -v uv >/dev/null 2>&1
}}
gb_python() {{
  if "{source.python}" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null; then
    GB_PY=$(command -v "{source.python}"); return 10  # already a virtual environment: use it
  fi
  GB_PY="$HOME/gpubench-env/bin/python"
  [ -x "$GB_PY" ] && return 10
  uv venv -q --system-site-packages --python "{source.python}" "$HOME/gpubench-env"
}}
gb_torch() {{
  gb_has torch && return 10
  uv pip install -q --python "$GB_PY" {torch_opts} {q(source.torch)}
}}
gb_gpubench() {{
  gb_has gpubench && return 10
  uv pip install -q --python "$GB_PY" {general} {q(gpubench)}
}}
{chr(10).join(f"gb_step {step}" for step in STEPS)}
export PATH="$(dirname "$GB_PY"):$PATH"
"""


def with_bootstrap(command: str, source: BootstrapSource | None = None) -> str:
    return bootstrap_script(source or BootstrapSource.from_env()) + command + "\n"


def bootstrap_phases(records) -> dict[str, float]:
    """`bootstrap_<step>_s` for each bootstrap Progress record among `records` (parsed records)."""
    out = {}
    for record in records:
        phase = getattr(record, "phase", None) or ""
        if getattr(record, "kind", None) != "progress" or not phase.startswith(PHASE + " "):
            continue
        try:
            status, seconds, _ = (record.message or "").split()
            out[f"{PHASE}_{phase.split()[1]}_s"] = float(seconds)
        except ValueError:
            continue
    return out
