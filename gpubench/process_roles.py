"""Which host processes a result's figures tell apart (data/process_roles.csv): gpubench's client processes, vLLM's
API server and engine core. Read by the utilisation sampler, which names each process, and by the verdicts, which
say whose thread was the busiest."""

from __future__ import annotations

import csv
from importlib import resources


def _role_rows() -> list[dict[str, str]]:
    text = resources.files("gpubench").joinpath("data", "process_roles.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


ROLE_ROWS = _role_rows()
ROLE_LABELS = {row["role"]: row["label"] for row in ROLE_ROWS}  # role -> how a verdict names it
ROLE_RELIEF = {row["role"]: row["relief"] for row in ROLE_ROWS}  # role -> what would take work off its thread
